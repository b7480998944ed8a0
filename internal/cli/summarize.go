package cli

import (
	"context"

	"github.com/aibuddy/aibuddy/compact"
	"github.com/aibuddy/aibuddy/config"
	"github.com/aibuddy/aibuddy/mcpserver"
	"github.com/aibuddy/aibuddy/provider"
)

// summaryOptions puts the summary bounds of the settings
// (compaction.summaryTimeout, summaryMaxTokens, summaryInputMaxChars; 0
// keeps compact's defaults) into the compactor's options.
func summaryOptions(cfg *config.Config, o *compact.Options) {
	s := cfg.Compaction.CompactionSummary
	o.SummaryTimeout, o.SummaryMaxTokens, o.SummaryInputMaxChars = s.SummaryTimeout.D(), s.SummaryMaxTokens, s.SummaryInputMaxChars
}

// runSummarizer is the summarizer of `aibuddy run`: the run's own
// provider route asked for compaction.summaryModel (default a cheaper
// model of the provider, config.DefaultSummaryModel). runModel is the
// run's model name ("" for the adapter's default). With summaryModel
// "none" every summary is refused with that reason (the result is
// trimmed).
func runSummarizer(cfg *config.Config, route provider.Route, model provider.Model, runModel string) compact.Summarizer {
	name := cfg.Compaction.SummaryModelFor(route.Provider, runModel)
	if name == "" {
		return refusedSummary(`compaction.summaryModel is "none"`)
	}
	return compact.ModelSummarizer{Model: model, Name: name, Provider: route.Provider}
}

// refusedSummary is a summarizer that is never available, for the reason
// it holds.
type refusedSummary string

func (r refusedSummary) Summarize(context.Context, *compact.SummaryRequest) (*compact.Summary, error) {
	return nil, compact.Unavailable(string(r))
}

// Summarize is the summarizer of `aibuddy mcp`: the request goes to the
// host of the session whose task it is, through MCP sampling
// (mcpserver.Sampler), with compaction.summaryModel as the model hint. A
// task whose session has ended is refused with that reason.
func (g *gateways) Summarize(ctx context.Context, req *compact.SummaryRequest) (*compact.Summary, error) {
	g.mu.Lock()
	var gw *mcpserver.Gateway
	for _, x := range g.all {
		if x.TaskID() == req.TaskID {
			gw = x
		}
	}
	g.mu.Unlock()
	if gw == nil {
		return nil, compact.Unavailable("the MCP session of task " + req.TaskID + " has ended, so no host can be asked for a summary")
	}
	hint := g.r.cfg.Compaction.SummaryModel
	if g.r.cfg.Compaction.Off() {
		return nil, compact.Unavailable(`compaction.summaryModel is "none"`)
	}
	return mcpserver.Sampler{Gateway: gw, Preferences: mcpserver.DefaultSamplingPreferences(hint)}.Summarize(ctx, req)
}
