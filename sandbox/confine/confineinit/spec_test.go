package confineinit_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/aibuddy/aibuddy/sandbox/confine/confineinit"
)

func TestSpecRoundTrip(t *testing.T) {
	in := &confineinit.Spec{Net: confineinit.NetLimited, Writable: []string{"/ws", "/tmp/x"}, ReadOnly: []string{"/ws/.git"},
		MaskDirs: []string{"/h/.ssh"}, MaskFiles: []string{"/ws/.env", "/run/x.sock"}, Dir: "/ws", Path: "/bin/sh",
		Args: []string{"sh", "-c", "echo 'a b'\n"}, Env: []string{"A=1", "EMPTY="}, ExitWithMain: true,
		Filter: [][4]uint32{{0x20, 0, 0, 4}, {0x15, 1, 0, 0xc000003e}, {6, 0, 0, 0x7fff0000}}, Landlock: true, LandlockFlags: 0x10002,
		Probe: &confineinit.Probe{Outside: "/o", Inside: "/ws", Masked: "/ws/s", ReadOnly: "/ws/ro"}}
	out, err := confineinit.Decode(confineinit.Encode(in))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if _, err := confineinit.Decode([]byte{'n', 9, 'x'}); err == nil {
		t.Error("a truncated spec decoded")
	}
}

func ExampleEncode() {
	b := confineinit.Encode(&confineinit.Spec{Net: confineinit.NetOff, Path: "/bin/true", Args: []string{"true"}})
	s, err := confineinit.Decode(b)
	fmt.Println(s.Net, s.Path, s.Args, err)
	// Output: off /bin/true [true] <nil>
}
