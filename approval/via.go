package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aibuddy/aibuddy/tool"
)

// Via says where a person is asked (settings approval.via): the MCP host
// (elicitation, the default), a browser on the web view (a [Broker]), or
// both at once, the first answer winning.
type Via string

// The approval.via values.
const (
	ViaHost Via = "host"
	ViaWeb  Via = "web"
	ViaBoth Via = "both"
)

// ParseVia reads an approval.via value; "" is ViaHost.
func ParseVia(s string) (Via, error) {
	switch v := Via(s); v {
	case "":
		return ViaHost, nil
	case ViaHost, ViaWeb, ViaBoth:
		return v, nil
	}
	return "", fmt.Errorf("approval.via is %q; use \"host\", \"web\" or \"both\"", s)
}

// Web reports whether a browser is asked.
func (v Via) Web() bool { return v == ViaWeb || v == ViaBoth }

// ConfirmVia is the Confirmer for v: host for ViaHost, web for ViaWeb,
// and for ViaBoth one that asks both at once and takes the first
// decision, withdrawing the other question; an error of one (a host that
// cannot elicit) waits for the other, and only when both fail is the
// action refused, with both reasons. A nil side is nobody to ask.
func ConfirmVia(v Via, host, web Confirmer) Confirmer {
	return pick(v, host, web, func() Confirmer {
		return ConfirmerFunc(func(ctx context.Context, a Action) (Decision, error) {
			return first(ctx, func(ctx context.Context) (Decision, error) { return host.Confirm(ctx, a) },
				func(ctx context.Context) (Decision, error) { return web.Confirm(ctx, a) })
		})
	})
}

// AskVia is [ConfirmVia] for ask_user_question.
func AskVia(v Via, host, web Asker) Asker {
	return pick(v, host, web, func() Asker {
		return AskerFunc(func(ctx context.Context, q Question) (Answer, error) {
			return first(ctx, func(ctx context.Context) (Answer, error) { return host.Ask(ctx, q) },
				func(ctx context.Context) (Answer, error) { return web.Ask(ctx, q) })
		})
	})
}

// pick is the side v names: web for ViaWeb, host for ViaHost, and for
// ViaBoth both() when both sides are there, else the one that is.
func pick[T any](v Via, host, web T, both func() T) T {
	switch v {
	case ViaWeb:
		return web
	case ViaBoth:
		switch {
		case any(host) == nil:
			return web
		case any(web) == nil:
			return host
		}
		return both()
	}
	return host
}

// first runs both and returns the first success; the other is cancelled.
func first[T any](ctx context.Context, a, b func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type out struct {
		v   T
		err error
	}
	ch := make(chan out, 2)
	go func() { v, err := a(ctx); ch <- out{v, err} }()
	go func() { v, err := b(ctx); ch <- out{v, err} }()
	var errs []error
	for range 2 {
		o := <-ch
		if o.err == nil {
			return o.v, nil
		}
		errs = append(errs, o.err)
	}
	var zero T
	return zero, errors.Join(errs...)
}

// Errors of [Broker.Decide] and [Broker.Answer].
var (
	// ErrNotPending: no request has that id now: it was decided (a
	// decision binds one action once: a replay is refused), withdrawn
	// (its call was cancelled or the host answered first), or never
	// asked.
	ErrNotPending = errors.New("no such pending request: it was already decided, withdrawn, or never asked (a decision binds one action, once)")
	// ErrOtherAction: the decision names another action than the one
	// pending under that id (its digest, Action.Key, differs).
	ErrOtherAction = errors.New("the decision names another action than the one pending (the digest differs); reload the page and decide what is shown")
	// ErrWrongKind: a confirm answered as a question, or the reverse.
	ErrWrongKind = errors.New("the request is of another kind (a confirm is approved or rejected, a question answered)")
)

// RequestKind is what a [Request] waits for.
type RequestKind string

// Request kinds.
const (
	KindConfirm  RequestKind = "confirm"
	KindQuestion RequestKind = "question"
)

// Request is one question waiting in a [Broker] for a person.
type Request struct {
	// ID is the request's own id (random, 128 bits); a decision names it.
	ID   string      `json:"id"`
	Kind RequestKind `json:"kind"`
	// TaskID is the task of the call that asks (tool.TaskID of its
	// context), "" when unknown.
	TaskID string `json:"taskId,omitempty"`
	// Action is the confirm's action exactly as the Gate records it
	// (target, scope, consequence, reasons, rule, fix); Digest is its
	// Action.Key, which a decision must repeat.
	Action *Action `json:"action,omitempty"`
	Digest string  `json:"digest,omitempty"`
	// Question is the ask_user_question's question.
	Question *Question `json:"question,omitempty"`
	AskedAt  time.Time `json:"askedAt"`

	reply chan reply
}

type reply struct {
	d Decision
	a Answer
}

// BrokerOptions configure a [Broker]; nil means the defaults.
type BrokerOptions struct {
	// OnChange is called (without locks held) whenever a request is
	// added or leaves (decided, answered, withdrawn). It must not block.
	OnChange func()
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Timeout bounds how long a request waits for a person (settings
	// web.approvalTimeout); past it the request is withdrawn and the
	// action refused at the Authorization stage, never run unasked.
	// Default 0: until the call's context ends.
	Timeout time.Duration
	// Where names the place a person decides, for the refusal's hint
	// (e.g. "http://127.0.0.1:8765/ui/"). Default "the web view (/ui/)".
	Where string
}

// Broker holds the confirms and questions waiting for a person at a
// browser (approval.via "web" or "both"): it is a [Confirmer] and an
// [Asker] whose calls wait until [Broker.Decide] or [Broker.Answer]
// names their request, or their context ends (the request is then
// withdrawn). A decision is bound to one request id and the digest of its
// action, is taken once, and is never reused for another call. Safe for
// concurrent use.
type Broker struct {
	opts    BrokerOptions
	mu      sync.Mutex
	pending map[string]*Request
}

// NewBroker returns an empty broker.
func NewBroker(o *BrokerOptions) *Broker {
	b := &Broker{pending: map[string]*Request{}}
	if o != nil {
		b.opts = *o
	}
	if b.opts.Now == nil {
		b.opts.Now = time.Now
	}
	return b
}

// Confirm puts a to a person at the browser and waits for Decide, or for
// ctx (then the request is withdrawn and ctx's error returned, as
// [Confirmer] requires).
func (b *Broker) Confirm(ctx context.Context, a Action) (Decision, error) {
	ac := a
	r := &Request{Kind: KindConfirm, Action: &ac, Digest: a.Key()}
	got, err := b.wait(ctx, r)
	return got.d, err
}

// Ask puts q to a person at the browser and waits for Answer, or ctx.
func (b *Broker) Ask(ctx context.Context, q Question) (Answer, error) {
	qc := q
	got, err := b.wait(ctx, &Request{Kind: KindQuestion, Question: &qc})
	return got.a, err
}

func (b *Broker) wait(ctx context.Context, r *Request) (reply, error) {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	r.ID = hex.EncodeToString(id)
	r.TaskID = tool.TaskID(ctx)
	r.AskedAt = b.opts.Now()
	r.reply = make(chan reply, 1)
	b.mu.Lock()
	b.pending[r.ID] = r
	b.mu.Unlock()
	b.changed()
	var expired <-chan time.Time
	if b.opts.Timeout > 0 {
		t := time.NewTimer(b.opts.Timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case got := <-r.reply:
		return got, nil
	case <-expired:
		if got, decided := b.withdraw(r); decided {
			return got, nil
		}
		where := b.opts.Where
		if where == "" {
			where = "the web view (/ui/)"
		}
		return reply{}, tool.Errorf(tool.Authorization, "nobody answered at %s within %s (web.approvalTimeout)", where, b.opts.Timeout).
			WithHint("do not retry it unasked; ask the user to open " + where + " and decide, then try again (or to raise web.approvalTimeout)")
	case <-ctx.Done():
		if got, decided := b.withdraw(r); decided {
			return got, nil
		}
		return reply{}, ctx.Err()
	}
}

// withdraw removes r unless it was decided at the same moment (then the
// decision stands and is returned).
func (b *Broker) withdraw(r *Request) (reply, bool) {
	b.mu.Lock()
	_, still := b.pending[r.ID]
	delete(b.pending, r.ID)
	b.mu.Unlock()
	if !still {
		return <-r.reply, true
	}
	b.changed()
	return reply{}, false
}

func (b *Broker) changed() {
	if b.opts.OnChange != nil {
		b.opts.OnChange()
	}
}

// Pending returns the requests waiting now, oldest first (copies).
func (b *Broker) Pending() []Request {
	b.mu.Lock()
	out := make([]Request, 0, len(b.pending))
	for _, r := range b.pending {
		c := *r
		c.reply = nil
		out = append(out, c)
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].AskedAt.Equal(out[j].AskedAt) {
			return out[i].AskedAt.Before(out[j].AskedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// take removes and returns the request id when it is of kind k (and, for
// a confirm, its digest is digest).
func (b *Broker) take(id string, k RequestKind, digest string) (*Request, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.pending[id]
	switch {
	case !ok:
		return nil, ErrNotPending
	case r.Kind != k:
		return nil, ErrWrongKind
	case k == KindConfirm && r.Digest != digest:
		return nil, ErrOtherAction
	}
	delete(b.pending, id)
	return r, nil
}

// Decide gives the decision on the confirm request id, whose action's
// digest (Action.Key) must be digest. Errors: ErrNotPending (decided
// already: a replay; withdrawn; unknown), ErrOtherAction, ErrWrongKind;
// the request then stays as it was.
func (b *Broker) Decide(id, digest string, d Decision) error {
	r, err := b.take(id, KindConfirm, digest)
	if err != nil {
		return err
	}
	r.reply <- reply{d: d}
	b.changed()
	return nil
}

// Answer answers the question request id. Errors as for Decide.
func (b *Broker) Answer(id string, a Answer) error {
	r, err := b.take(id, KindQuestion, "")
	if err != nil {
		return err
	}
	r.reply <- reply{a: a}
	b.changed()
	return nil
}
