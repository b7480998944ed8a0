package compact

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Encoding is the BPE vocabulary token counts use: OpenAI's o200k_base,
// compiled into the binary by github.com/tiktoken-go/tokenizer (nothing is
// downloaded at run time).
const Encoding = "o200k_base"

var (
	codecOnce sync.Once
	codec     tokenizer.Codec
	codecErr  error
)

// Count returns the number of o200k_base tokens in s. It is exact for
// OpenAI's GPT-4o/GPT-5 family and an estimate for models with other
// tokenizers (Anthropic's Claude models typically count 10-30% more for
// the same text). The vocabulary is built on first use (about 0.1 s).
// Invalid UTF-8 counts as U+FFFD.
func Count(s string) int {
	codecOnce.Do(func() {
		codec, codecErr = tokenizer.Get(tokenizer.O200kBase)
		if codecErr == nil {
			codec.SetErrorMode(tokenizer.ErrorModeReplace)
		}
	})
	if codecErr != nil {
		return (len(s) + 3) / 4 // unreachable with the embedded vocabulary
	}
	n, err := codec.Count(s)
	if err != nil {
		return (len(s) + 3) / 4
	}
	return n
}

// Counter counts tokens; [Count] is the default.
type Counter func(string) int
