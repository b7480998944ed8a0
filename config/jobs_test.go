package config

import (
	"strings"
	"testing"
	"time"
)

// The jobs block is read with its units, and a negative value is refused
// naming the key.
func TestJobsSettings(t *testing.T) {
	c, err := Parse([]byte(`{"jobs": {"maxRunning": 2, "maxOutputBytes": 1048576, "maxTotalBytes": 8388608, "maxWait": "5s",
		"maxLifetime": "30m", "idleTimeout": 60000, "keepAfterSession": true, "flushInterval": "100ms", "flushBytes": 4096,
		"killWait": "3s", "startWait": "2s"}}`))
	if err != nil {
		t.Fatal(err)
	}
	j := c.Jobs
	if j.MaxRunning != 2 || j.MaxOutputBytes != 1<<20 || j.MaxTotalBytes != 8<<20 || j.MaxWait.D() != 5*time.Second ||
		j.MaxLifetime.D() != 30*time.Minute || j.IdleTimeout.D() != time.Minute || !j.KeepAfterSession ||
		j.FlushInterval.D() != 100*time.Millisecond || j.FlushBytes != 4096 || j.KillWait.D() != 3*time.Second || j.StartWait.D() != 2*time.Second {
		t.Errorf("parsed %+v", j)
	}
	_, err = Parse([]byte(`{"jobs": {"maxRunning": -1, "maxWait": "-1s"}}`))
	if err == nil || !strings.Contains(err.Error(), "jobs.maxRunning, jobs.maxWait") {
		t.Errorf("negative values: %v", err)
	}
	if _, err := Parse([]byte(`{"jobs": {"maxrunning": 1}}`)); err == nil || !strings.Contains(err.Error(), "jobs.maxRunning") {
		t.Errorf("a key in the wrong case: %v", err)
	}
}
