package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aibuddy/aibuddy/approval"
	"github.com/aibuddy/aibuddy/tool"
)

func TestAskUserQuestion(t *testing.T) {
	var got approval.Question
	ask := approval.AskUserQuestion(approval.AskerFunc(func(ctx context.Context, q approval.Question) (approval.Answer, error) {
		got = q
		return approval.Answer{Text: "staging"}, nil
	}))
	res := ask.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"question":"Deploy where?","options":["staging","prod"]}`)})
	if res.IsError || res.AllText() != "The user answered: staging" || res.Evidence["answer"] != "staging" {
		t.Fatalf("got %+v", res)
	}
	if got.Text != "Deploy where?" || len(got.Options) != 2 {
		t.Errorf("asker got %+v", got)
	}
	failing := approval.AskUserQuestion(approval.AskerFunc(func(ctx context.Context, q approval.Question) (approval.Answer, error) {
		return approval.Answer{}, errors.New("terminal closed")
	}))
	res = failing.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"question":"ok?"}`)})
	if !res.IsError || res.Stage != tool.Execution {
		t.Errorf("asker failure: %+v", res)
	}
	res = ask.Call(context.Background(), &tool.Call{Input: json.RawMessage(`{"question":""}`)})
	if res.Stage != tool.Parameters {
		t.Errorf("empty question: %+v", res)
	}
}
