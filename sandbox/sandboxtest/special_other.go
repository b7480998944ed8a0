//go:build !unix

package sandboxtest

import "testing"

func makeSpecials(t *testing.T, ws string) map[string]string {
	t.Skip("FIFOs, sockets and devices are unix objects")
	return nil
}

func makeDeep(t *testing.T, ws string, n int) (string, bool) {
	t.Skip("the deep-path case builds its tree with the unix *at calls")
	return "", false
}

func mkfifo(t *testing.T, p string) bool {
	t.Skip("FIFOs are unix objects")
	return false
}

func mkfifoQuiet(string) {}

func releaseFIFO(string) {}
