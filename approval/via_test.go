package approval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/tool"
)

// brokerWith returns a broker and a channel told of every change.
func brokerWith() (*approval.Broker, chan struct{}) {
	ch := make(chan struct{}, 16)
	return approval.NewBroker(&approval.BrokerOptions{OnChange: func() { ch <- struct{}{} }}), ch
}

// A decision binds the one pending action it names: the right id with
// another action's digest is refused, the right pair decides, and the
// same decision again (a replay) is refused.
func TestBrokerDecisionBindsOneActionOnce(t *testing.T) {
	b, changed := brokerWith()
	a := approval.Action{CallID: "c1", Tool: "execute", Input: []byte(`{"command":"rm -rf x"}`), Target: "`rm -rf x`",
		Scope: "workspace shell", Consequence: "runs the command"}
	done := make(chan approval.Decision, 1)
	go func() {
		d, err := b.Confirm(context.Background(), a)
		if err != nil {
			t.Error(err)
		}
		done <- d
	}()
	<-changed
	p := b.Pending()
	if len(p) != 1 || p[0].Kind != approval.KindConfirm || p[0].Action.Target != a.Target || p[0].Digest != a.Key() {
		t.Fatalf("pending %+v", p)
	}
	other := a
	other.Input = []byte(`{"command":"rm -rf y"}`)
	other.Target = "`rm -rf y`"
	if err := b.Decide(p[0].ID, other.Key(), approval.Decision{Approved: true}); !errors.Is(err, approval.ErrOtherAction) {
		t.Fatalf("another action's digest: %v", err)
	}
	if err := b.Answer(p[0].ID, approval.Answer{Text: "yes"}); !errors.Is(err, approval.ErrWrongKind) {
		t.Fatalf("a confirm answered as a question: %v", err)
	}
	if err := b.Decide(p[0].ID, p[0].Digest, approval.Decision{Approved: true, Note: "ok"}); err != nil {
		t.Fatal(err)
	}
	if d := <-done; !d.Approved || d.Note != "ok" {
		t.Fatalf("decision %+v", d)
	}
	if err := b.Decide(p[0].ID, p[0].Digest, approval.Decision{Approved: true}); !errors.Is(err, approval.ErrNotPending) {
		t.Fatalf("replayed decision: %v", err)
	}
	if len(b.Pending()) != 0 {
		t.Fatal("still pending")
	}
}

// A request whose call ends is withdrawn: a late decision is refused.
func TestBrokerWithdrawsOnCancel(t *testing.T) {
	b, changed := brokerWith()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.Ask(ctx, approval.Question{Text: "which?", Options: []string{"a", "b"}})
		errc <- err
	}()
	<-changed
	id := b.Pending()[0].ID
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ask: %v", err)
	}
	if err := b.Answer(id, approval.Answer{Text: "a"}); !errors.Is(err, approval.ErrNotPending) {
		t.Fatalf("answer after withdrawal: %v", err)
	}
}

// With "both", the first decision wins and the other side is withdrawn;
// a side that cannot ask (the host without elicitation) waits for the
// other.
func TestConfirmViaBoth(t *testing.T) {
	b, changed := brokerWith()
	host := approval.ConfirmerFunc(func(ctx context.Context, a approval.Action) (approval.Decision, error) {
		return approval.Decision{}, errors.New("the host cannot ask")
	})
	c := approval.ConfirmVia(approval.ViaBoth, host, b)
	done := make(chan error, 1)
	go func() {
		d, err := c.Confirm(context.Background(), approval.Action{Tool: "execute", Target: "x"})
		if err == nil && d.Approved {
			err = errors.New("approved, but the browser rejected")
		}
		done <- err
	}()
	<-changed
	p := b.Pending()[0]
	if err := b.Decide(p.ID, p.Digest, approval.Decision{Approved: false}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-changed // decided
	// The host answers first: the browser's request is withdrawn.
	yes := approval.ConfirmerFunc(func(ctx context.Context, a approval.Action) (approval.Decision, error) {
		<-changed // the browser's request is up
		return approval.Decision{Approved: true}, nil
	})
	d, err := approval.ConfirmVia(approval.ViaBoth, yes, b).Confirm(context.Background(), approval.Action{Tool: "t"})
	if err != nil || !d.Approved {
		t.Fatalf("host first: %+v %v", d, err)
	}
	<-changed // withdrawn
	if n := len(b.Pending()); n != 0 {
		t.Fatalf("%d requests left after the host decided", n)
	}
	if v, err := approval.ParseVia("browser"); err == nil {
		t.Fatalf("ParseVia accepted %q", v)
	}
}

// A request nobody decides within the broker's Timeout is withdrawn and
// refused at the Authorization stage (fails closed), saying where to
// decide and which setting bounds it.
func TestBrokerTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := approval.NewBroker(&approval.BrokerOptions{Timeout: 10 * time.Minute, Where: "http://127.0.0.1:8765/ui/"})
		_, err := b.Confirm(context.Background(), approval.Action{Tool: "execute", Target: "`rm -rf x`"})
		var te *tool.Error
		if !errors.As(err, &te) || te.Stage != tool.Authorization || !strings.Contains(te.Msg, "http://127.0.0.1:8765/ui/") ||
			!strings.Contains(te.Msg, "10m0s (web.approvalTimeout)") {
			t.Fatalf("timeout: %v", err)
		}
		if len(b.Pending()) != 0 {
			t.Fatal("the expired request is still pending")
		}
	})
}
