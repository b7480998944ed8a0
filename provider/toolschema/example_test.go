package toolschema_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aibuddy/aibuddy/provider/toolschema"
)

// A schema with an optional property is rewritten for OpenAI strict mode
// (the property becomes required and nullable); one with a format strict
// mode does not support goes non-strict, with the reason.
func ExampleForOpenAIStrict() {
	out, _, err := toolschema.ForOpenAIStrict(json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"},"limit":{"type":"integer"}},"required":["q"]}`))
	fmt.Println(string(out), err)

	_, _, err = toolschema.ForOpenAIStrict(json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}`))
	fmt.Println(errors.Is(err, toolschema.ErrNotStrict), err)
	// Output:
	// {"additionalProperties":false,"properties":{"limit":{"type":["integer","null"]},"q":{"type":"string"}},"required":["limit","q"],"type":"object"} <nil>
	// true toolschema: schema cannot be made strict: /properties/url/format: removed format uri (not supported in strict mode)
}

// Case BH-094: the Gemini subset has no exclusiveMinimum, uniqueItems or
// additionalProperties.
func ExampleForGemini() {
	out, notes, _ := toolschema.ForGemini(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":0},"tags":{"type":"array","uniqueItems":true,"items":{"type":"string"}}},"additionalProperties":false}`), toolschema.GeminiOptions{})
	fmt.Println(string(out))
	for _, n := range notes {
		fmt.Println(n.Lossy, n)
	}
	// Output:
	// {"properties":{"n":{"minimum":1,"type":"integer"},"tags":{"description":"Also: items are unique.","items":{"type":"string"},"type":"array"}},"type":"object"}
	// true /additionalProperties: removed additionalProperties false (not in the Gemini subset)
	// false /properties/n/exclusiveMinimum: exclusiveMinimum 0 on an integer sent as minimum 1 (same meaning)
	// true /properties/tags/uniqueItems: removed uniqueItems (not in the Gemini subset); described
}

// A top-level anyOf becomes root properties the model can see.
func ExampleForAnthropic() {
	out, _, _ := toolschema.ForAnthropic(json.RawMessage(`{"type":"object","anyOf":[{"properties":{"path":{"type":"string"}},"required":["path"]},{"properties":{"url":{"type":"string"}},"required":["url"]}]}`))
	fmt.Println(string(out))
	// Output:
	// {"description":"Also required (checked when called): at least one of these forms: (path is required) or (url is required).","properties":{"path":{"type":"string"},"url":{"type":"string"}},"type":"object"}
}
