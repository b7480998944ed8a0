package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aibuddy/aibuddy/pipeline"
	"github.com/aibuddy/aibuddy/result"
	"github.com/aibuddy/aibuddy/store"
	"github.com/aibuddy/aibuddy/tool"
)

// Stages are the failure stages in the seed's order, for the charts.
var stages = []tool.Stage{tool.Discovery, tool.Parameters, tool.Authorization, tool.Execution, tool.Projection, tool.Verification}

var funcs = template.FuncMap{
	"dur": func(d time.Duration) string {
		switch {
		case d <= 0:
			return ""
		case d < time.Second:
			return fmt.Sprintf("%d ms", d.Milliseconds())
		}
		return d.Round(100 * time.Millisecond).String()
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"pct": func(n, of int) int {
		if of == 0 {
			return 0
		}
		return n * 100 / of
	},
	"q": url.QueryEscape,
}

// taskRow is one task on the records page.
type taskRow struct {
	ID       string
	Calls    int
	Failed   int
	ByStage  []stageCount
	Started  time.Time
	Last     time.Time
	Running  int
	Compacts int
}

type stageCount struct {
	Stage string
	N     int
	Pct   int // of the largest count shown beside it
}

func countStages(recs []*store.Record) map[string]int {
	m := map[string]int{}
	for _, r := range recs {
		if isConfirm(r) {
			continue // the exchange: its call carries the outcome
		}
		if r.Outcome == store.OutcomeError || r.Outcome == store.OutcomeCancelled {
			st := r.Stage
			if st == "" {
				st = string(tool.Execution)
			}
			m[st]++
		}
	}
	return m
}

func bars(m map[string]int) []stageCount {
	most := 0
	for _, n := range m {
		most = max(most, n)
	}
	out := make([]stageCount, 0, len(stages))
	for _, st := range stages {
		n := m[string(st)]
		p := 0
		if most > 0 {
			p = n * 100 / most
		}
		out = append(out, stageCount{Stage: string(st), N: n, Pct: p})
	}
	return out
}

// storeErr answers a store failure at its stage with what to do.
func (s *Server) storeErr(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, store.ErrNotFound) {
		code = http.StatusNotFound
	}
	s.o.Logger.Warn("web: store", "err", err)
	http.Error(w, "aibuddy web: Projection: reading the call records: "+err.Error()+"; next: check the data folder (--data-dir) names the records of that run", code)
}

// tasksPage lists the most recent tasks with their failures by stage, and
// a chart of all of them.
func (s *Server) tasksPage(w http.ResponseWriter, req *http.Request, sess *session) {
	ctx := req.Context()
	ids, err := s.o.Store.Tasks(ctx, s.w.Tasks)
	if err != nil {
		s.storeErr(w, err)
		return
	}
	total := map[string]int{}
	var rows []taskRow
	calls, failed := 0, 0
	for _, id := range ids {
		recs, err := s.o.Store.ListTask(ctx, id)
		if err != nil {
			s.storeErr(w, err)
			return
		}
		row := taskRow{ID: id}
		for _, r := range recs {
			if isConfirm(r) {
				continue // a confirm exchange, shown with its call
			}
			row.Calls++
			if r.Outcome == store.OutcomeRunning {
				row.Running++
			}
			if r.Compaction != store.CompactionNone {
				row.Compacts++
			}
			if row.Started.IsZero() || (!r.StartedAt.IsZero() && r.StartedAt.Before(row.Started)) {
				row.Started = r.StartedAt
			}
			for _, t := range []time.Time{r.StartedAt, r.EndedAt} {
				if t.After(row.Last) {
					row.Last = t
				}
			}
		}
		m := countStages(recs)
		for k, v := range m {
			total[k] += v
			row.Failed += v
		}
		row.ByStage = bars(m)
		calls += row.Calls
		failed += row.Failed
		rows = append(rows, row)
	}
	s.render(w, http.StatusOK, "tasks", page{Title: "Tasks", Nav: "tasks", CSRF: sess.csrf, Data: map[string]any{
		"Rows": rows, "Chart": bars(total), "Calls": calls, "Failed": failed, "Limit": s.w.Tasks}})
}

// callRow is one call in a list.
type callRow struct {
	Rec    *store.Record
	Target string
	Took   time.Duration
	Saved  int // percent of the output's bytes compaction saved
}

func rowOf(r *store.Record) callRow {
	c := callRow{Rec: r, Target: result.Target(r.Input)}
	if !r.EndedAt.IsZero() {
		c.Took = r.EndedAt.Sub(r.StartedAt)
	}
	if r.Compaction != store.CompactionNone && len(r.Output) > 0 {
		c.Saved = 100 - len(r.Model)*100/len(r.Output)
	}
	return c
}

// taskPage lists one task's calls.
func (s *Server) taskPage(w http.ResponseWriter, req *http.Request, sess *session) {
	id := req.PathValue("id")
	recs, err := s.o.Store.ListTask(req.Context(), id)
	if err != nil {
		s.storeErr(w, err)
		return
	}
	if len(recs) == 0 {
		s.storeErr(w, fmt.Errorf("task %s has no records: %w", id, store.ErrNotFound))
		return
	}
	var rows []callRow
	for _, r := range recs {
		rows = append(rows, rowOf(r))
	}
	s.render(w, http.StatusOK, "task", page{Title: "Task " + id, Nav: "tasks", CSRF: sess.csrf,
		Data: map[string]any{"ID": id, "Rows": rows, "Chart": bars(countStages(recs))}})
}

// searchPage finds calls by tool and failure stage over the most recent
// web.searchTasks tasks.
func (s *Server) searchPage(w http.ResponseWriter, req *http.Request, sess *session) {
	q := req.URL.Query()
	toolName, stage := strings.TrimSpace(q.Get("tool")), q.Get("stage")
	ctx := req.Context()
	ids, err := s.o.Store.Tasks(ctx, s.w.SearchTasks)
	if err != nil {
		s.storeErr(w, err)
		return
	}
	var rows []callRow
	if toolName != "" || stage != "" {
		for _, id := range ids {
			recs, err := s.o.Store.ListTask(ctx, id)
			if err != nil {
				s.storeErr(w, err)
				return
			}
			for _, r := range recs {
				if toolName != "" && !strings.Contains(r.Tool, toolName) {
					continue
				}
				if stage != "" && r.Stage != stage {
					continue
				}
				rows = append(rows, rowOf(r))
			}
		}
	}
	var names []string
	for _, st := range stages {
		names = append(names, string(st))
	}
	s.render(w, http.StatusOK, "search", page{Title: "Search", Nav: "search", CSRF: sess.csrf, Data: map[string]any{
		"Tool": toolName, "Stage": stage, "Stages": names, "Rows": rows, "Searched": len(ids), "Asked": toolName != "" || stage != ""}})
}

// pane is one projection of a call, paged.
type pane struct {
	Name, Title, Note string
	Text              string
	Page, Pages       int
	Chars             int
	Unit              string // of Chars and pages: characters, or bytes
	Param             string
	Prev, Next        string // links, "" at the ends
}

// paged cuts text into pages of n characters (runes) and returns page p
// (0-based, clamped) with links that keep the other panes' pages.
func paged(name, title, note, text string, p, n int, base url.Values, param string) pane {
	r := []rune(text)
	pages := max(1, (len(r)+n-1)/n)
	p = min(max(p, 0), pages-1)
	lo, hi := p*n, min((p+1)*n, len(r))
	pn := pane{Name: name, Title: title, Note: note, Text: string(r[lo:hi]), Page: p + 1, Pages: pages, Chars: len(r), Unit: "characters", Param: param}
	link := func(to int) string {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		v.Set(param, strconv.Itoa(to))
		return "?" + v.Encode() + "#" + name
	}
	if p > 0 {
		pn.Prev = link(p - 1)
	}
	if p < pages-1 {
		pn.Next = link(p + 1)
	}
	return pn
}

func pretty(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// callPage shows one call in its three projections side by side (client,
// model, record), each paged, with the compaction saving and the
// view_tool_call pointer.
func (s *Server) callPage(w http.ResponseWriter, req *http.Request, sess *session) {
	id := req.PathValue("id")
	rec, err := s.o.Store.Get(req.Context(), id)
	if err != nil {
		s.storeErr(w, err)
		return
	}
	q := req.URL.Query()
	num := func(k string) int { n, _ := strconv.Atoi(q.Get(k)); return n }
	client := result.ClientOf(rec)
	model, _ := result.Decode(rec.Model)
	n := s.w.PageChars
	clientText := client.Output
	if clientText == "" && rec.Outcome == store.OutcomeRunning {
		clientText = "(running: the live page shows its output as it comes)"
	}
	modelNote := "as later model steps see it"
	if rec.Compaction != store.CompactionNone {
		modelNote = "compacted (" + string(rec.Compaction) + ")"
	}
	clientPane := paged("client", "Client", "display fields and the result as the client got it", clientText, num("cp"), n, q, "cp")
	if full, ok := s.fullOutput(req.Context(), rec, int64(num("cp"))*int64(n), int64(n)); ok {
		clientPane = full.pane(num("cp"), n, q)
	}
	panes := []pane{
		clientPane,
		paged("model", "Model", modelNote, model.Text(), num("mp"), n, q, "mp"),
		paged("record", "Record", "raw input and output, durable", "input:\n"+pretty(rec.Input)+"\n\noutput:\n"+pretty(rec.Output), num("rp"), n, q, "rp"),
	}
	outChars, modelChars := len([]rune(client.Output)), len([]rune(model.Text()))
	saving := map[string]any{"OutputBytes": len(rec.Output), "ModelBytes": len(rec.Model), "OutputChars": outChars, "ModelChars": modelChars}
	if len(rec.Output) > 0 {
		saving["Pct"] = 100 - len(rec.Model)*100/len(rec.Output)
	}
	var confirm *store.Record
	if c, err := s.o.Store.Get(req.Context(), id+pipeline.ConfirmRecordSuffix); err == nil {
		confirm = c
	}
	view := ""
	if rec.Compaction != store.CompactionNone && rec.Compaction != store.CompactionDrop {
		v, _ := json.Marshal(map[string]string{"id": rec.ToolCallID})
		view = "view_tool_call " + string(v)
	}
	s.render(w, http.StatusOK, "call", page{Title: rec.Tool + " " + id, Nav: "tasks", CSRF: sess.csrf, Data: map[string]any{
		"Rec": rec, "Client": client, "Panes": panes, "Saving": saving, "View": view, "Confirm": confirm,
		"PageChars": n}})
}

// isConfirm reports whether r is the record of a confirm exchange
// (pipeline.ConfirmRecordSuffix), not of a call.
func isConfirm(r *store.Record) bool {
	return r.Tool == pipeline.ConfirmTool && strings.HasSuffix(r.ToolCallID, pipeline.ConfirmRecordSuffix)
}

// full is one page of a command's complete output.
type full struct {
	data []byte
	size int64
	from string
}

func (f full) pane(p, n int, base url.Values) pane {
	pages := int(max(1, (f.size+int64(n)-1)/int64(n)))
	text := strings.ToValidUTF8(string(f.data), "\uFFFD")
	pn := paged("client", "Client", "the complete output as streamed ("+f.from+", pages of "+strconv.Itoa(n)+" bytes)", text, 0, len(f.data)+1, base, "cp")
	pn.Page, pn.Pages, pn.Chars, pn.Unit = min(max(p, 0), pages-1)+1, pages, int(f.size), "bytes"
	pn.Prev, pn.Next = "", ""
	link := func(to int) string {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		v.Set("cp", strconv.Itoa(to))
		return "?" + v.Encode() + "#client"
	}
	if pn.Page > 1 {
		pn.Prev = link(pn.Page - 2)
	}
	if pn.Page < pages {
		pn.Next = link(pn.Page)
	}
	return pn
}

// fullOutput reads bytes [off, off+n) of the call's complete output when
// one was kept: the store's payload "outputs/<toolCallId>.log"
// (store.Payloads), else the full output file the result's evidence
// names (full_output_path), read only when it lies in Options.DataDir.
func (s *Server) fullOutput(ctx context.Context, rec *store.Record, off, n int64) (full, bool) {
	if pl, ok := s.o.Store.(store.Payloads); ok {
		if data, size, err := pl.ReadPayload(ctx, rec.TaskID, "outputs/"+rec.ToolCallID+".log", off, n); err == nil {
			return full{data: data, size: size, from: "payload"}, true
		}
	}
	w, err := result.Decode(rec.Output)
	if err != nil || s.o.DataDir == "" {
		return full{}, false
	}
	path, _ := w.Evidence["full_output_path"].(string)
	if path == "" {
		return full{}, false
	}
	root, err := filepath.Abs(s.o.DataDir)
	if err != nil {
		return full{}, false
	}
	if rel, err := filepath.Rel(root, filepath.Clean(path)); err != nil || !filepath.IsLocal(rel) {
		return full{}, false // not ours to read
	}
	f, err := os.Open(path)
	if err != nil {
		return full{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return full{}, false
	}
	off = min(max(off, 0), fi.Size())
	buf := make([]byte, min(n, fi.Size()-off))
	k, _ := f.ReadAt(buf, off)
	return full{data: buf[:k], size: fi.Size(), from: "full output file"}, true
}
