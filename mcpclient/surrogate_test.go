package mcpclient

import (
	"slices"
	"testing"
)

func TestLoneSurrogates(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		n        int
		at       []int
	}{
		{`{"t":"ok \ud800 end"}`, `{"t":"ok \ufffd end"}`, 1, []int{9}},
		{`{"t":"\ud83d\ude00 pair"}`, `{"t":"\ud83d\ude00 pair"}`, 0, nil},
		{`{"t":"\udc00\uD800"}`, `{"t":"\ufffd\ufffd"}`, 2, []int{6, 12}},
		{`{"t":"\\ud800 is text"}`, `{"t":"\\ud800 is text"}`, 0, nil},
		{`{"\ud800":1}`, `{"\ufffd":1}`, 1, []int{2}},
		{`{"t":"\u00e9"}`, `{"t":"\u00e9"}`, 0, nil},
	} {
		out, n, at := loneSurrogates([]byte(tc.in))
		if string(out) != tc.want || n != tc.n || !slices.Equal(at, tc.at) {
			t.Errorf("loneSurrogates(%s) = %s %d %v, want %s %d %v", tc.in, out, n, at, tc.want, tc.n, tc.at)
		}
	}
}
