package approval

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// Terminal puts confirmations and questions to a person at a terminal: it
// writes prompts to Out and reads one answer line from In per prompt. It
// implements [Confirmer] and [Asker] (`aibuddy run` injects one as both).
// Prompts are serialized. In is read by one goroutine started at the first
// prompt, which lives until In ends; a prompt returns when ctx is done
// even while that read is blocked.
//
// MCP mode (`aibuddy mcp`) reaches a person through MCP elicitation
// instead: ask_user_question is served that way already; confirm for
// high-impact calls through elicitation is a later step, and until then
// the MCP gateway does not run the confirm gate (the MCP host's own
// approval of each tools/call is the human decision there).
type Terminal struct {
	In  io.Reader
	Out io.Writer

	mu    sync.Mutex // one prompt at a time
	once  sync.Once
	lines chan string // closed when In ends
	err   error       // why In ended (io.EOF or a read error); set before close
}

// NewTerminal returns a Terminal over in and out.
func NewTerminal(in io.Reader, out io.Writer) *Terminal { return &Terminal{In: in, Out: out} }

// ErrNoAnswer: the input ended before the person answered.
var ErrNoAnswer = errors.New("the terminal input ended before an answer was given")

func (t *Terminal) start() {
	t.once.Do(func() {
		t.lines = make(chan string)
		go func() {
			sc := bufio.NewScanner(t.In)
			sc.Buffer(make([]byte, 64*1024), 1<<20)
			for sc.Scan() {
				t.lines <- sc.Text()
			}
			t.err = sc.Err()
			close(t.lines)
		}()
	})
}

// readLine waits for one line or ctx.
func (t *Terminal) readLine(ctx context.Context) (string, error) {
	t.start()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case l, ok := <-t.lines:
		if !ok {
			if t.err != nil {
				return "", fmt.Errorf("%w: %v", ErrNoAnswer, t.err)
			}
			return "", ErrNoAnswer
		}
		return l, nil
	}
}

// Confirm shows the action (tool, target, scope, consequence, reasons)
// and reads the decision: "y" or "yes" approves, anything else rejects;
// words after the first are the note ("n use the staging bucket").
// Errors: ctx's error, or ErrNoAnswer when In has ended.
func (t *Terminal) Confirm(ctx context.Context, a Action) (Decision, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.Out, "\n── confirm ─────────────────────────────\n")
	fmt.Fprintf(t.Out, "  tool:        %s\n  target:      %s\n  scope:       %s\n  consequence: %s\n", a.Tool, a.Target, a.Scope, a.Consequence)
	if a.Rule != "" {
		fmt.Fprintf(t.Out, "  asked by:    %s\n", a.Rule)
	}
	for _, r := range a.Reasons {
		fmt.Fprintf(t.Out, "  why asked:   %s\n", r)
	}
	fmt.Fprintf(t.Out, "Approve this action? [y/N] (add words after y/n to tell the agent why): ")
	line, err := t.readLine(ctx)
	if err != nil {
		fmt.Fprintln(t.Out)
		return Decision{}, err
	}
	word, note, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch strings.ToLower(word) {
	case "y", "yes":
		return Decision{Approved: true, Note: strings.TrimSpace(note)}, nil
	case "n", "no", "":
		return Decision{Note: strings.TrimSpace(note)}, nil
	}
	return Decision{Note: strings.TrimSpace(line)}, nil
}

// Ask shows the question and its numbered options and reads the answer:
// an option's number picks it, any other text is the answer as typed; an
// empty line declines. Errors: ctx's error, or ErrNoAnswer when In has
// ended.
func (t *Terminal) Ask(ctx context.Context, q Question) (Answer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.Out, "\n── question ────────────────────────────\n%s\n", strings.TrimSpace(q.Text))
	for i, o := range q.Options {
		fmt.Fprintf(t.Out, "  %d) %s\n", i+1, o)
	}
	fmt.Fprintf(t.Out, "Answer (empty line to decline): ")
	line, err := t.readLine(ctx)
	if err != nil {
		fmt.Fprintln(t.Out)
		return Answer{}, err
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return Answer{Declined: true}, nil
	}
	if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(q.Options) {
		return Answer{Text: q.Options[n-1]}, nil
	}
	return Answer{Text: line}, nil
}
