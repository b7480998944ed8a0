package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// sdkMaxDepth is the MCP SDK's bound on the nesting of one inbound JSON-RPC
// message (its internal JSON decoder refuses anything deeper than 1,000
// levels of objects and arrays). A message over it is a read error that
// closes the whole connection, so one tool whose schema nests 2,000 levels
// deep would take every tool of its server with it. defuse takes such
// messages apart first.
const sdkMaxDepth = 1000

// jsonDepth returns the deepest nesting of objects and arrays in data,
// skipping string contents; it stops counting once past limit.
func jsonDepth(data []byte, limit int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return deepest
}

// defuse returns one inbound JSON-RPC message (a line, newline kept) as
// the SDK may read it. A message within sdkMaxDepth comes back as it is
// (checked by counting brackets: most messages never reach the scan). In a
// deeper one:
//   - a result holding a "tools" array (tools/list) loses each tool that
//     is too deep, and quarantined is called with the tool's name and the
//     reason, so its siblings load and it shows as quarantined;
//   - any other response becomes a JSON-RPC error response for its id, so
//     the call fails instead of the connection;
//   - a request or notification is dropped.
//
// A message that encoding/json cannot decode either (over its 10,000
// levels) is passed on for the SDK to refuse.
func defuse(line []byte, maxSchemaDepth int, quarantined func(name, reason string)) []byte {
	if bytes.Count(line, []byte{'{'})+bytes.Count(line, []byte{'['}) <= sdkMaxDepth ||
		jsonDepth(line, sdkMaxDepth) <= sdkMaxDepth {
		return line
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(line, &env); err != nil {
		return line
	}
	id, isResponse := env["id"]
	if _, isRequest := env["method"]; isRequest {
		return nil
	}
	if !isResponse {
		return line
	}
	var res map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(env["result"], &res) == nil && json.Unmarshal(res["tools"], &tools) == nil && tools != nil {
		// The tools sit at depth 4: {message} {result} [tools] {tool}.
		kept := tools[:0]
		for _, t := range tools {
			d := jsonDepth(t, sdkMaxDepth)
			if 3+d <= sdkMaxDepth {
				kept = append(kept, t)
				continue
			}
			var head struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(t, &head)
			quarantined(head.Name, fmt.Sprintf("input schema rejected: nested deeper than %d levels of JSON objects and arrays "+
				"(past even the %d levels the MCP SDK reads in one message, so the tool was taken out of the tools/list answer); "+
				"the limit is the setting mcp.maxSchemaDepth", min(maxSchemaDepth, sdkMaxDepth), sdkMaxDepth))
		}
		if b, err := json.Marshal(kept); err == nil {
			res["tools"] = b
			if b, err := json.Marshal(res); err == nil {
				env["result"] = b
				if out, err := json.Marshal(env); err == nil && jsonDepth(out, sdkMaxDepth) <= sdkMaxDepth {
					return append(out, '\n')
				}
			}
		}
	}
	out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": -32603, "message": "response nested deeper than " + strconv.Itoa(sdkMaxDepth) +
			" levels of JSON objects and arrays; refused by aibuddy before the MCP SDK, which would close the connection"}})
	return append(out, '\n')
}
