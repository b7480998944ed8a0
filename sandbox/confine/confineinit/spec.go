package confineinit

import (
	"errors"
	"strconv"
)

// Network policies the init sets up (the values of confine.Network).
const (
	NetOff     = "off"
	NetLimited = "limited"
	NetOn      = "on"
)

// Spec is what the driver tells the init to set up and run.
type Spec struct {
	Net       string
	Writable  []string // bound read-write (absolute)
	ReadOnly  []string // inside writable roots, bound read-only again
	MaskDirs  []string
	MaskFiles []string
	Dir       string
	Path      string
	Args      []string
	Env       []string
	// ExitWithMain ends the sandbox when the main process exits.
	ExitWithMain bool
	// Filter is the seccomp program (struct sock_filter: code, jt, jf, k).
	Filter [][4]uint32
	// Landlock says the ruleset at LandlockFD is to be enforced, with
	// LandlockFlags for landlock_restrict_self.
	Landlock      bool
	LandlockFlags uint32
	// Probe, when set, runs the behavioural checks instead of a command.
	Probe *Probe
}

// Probe names the paths the probe's checks use.
type Probe struct {
	Outside  string // outside the writable roots: creating a file there must fail
	Inside   string // a writable root: creating a file there must work
	Masked   string // a file in MaskFiles: opening it must fail
	ReadOnly string // in ReadOnly: creating a file there must fail
}

// The Spec travels as records: a tag byte, the payload's length as a
// uvarint, the payload (no encoding/json: the init imports as little as it
// can, to start before the rest of the binary initializes).
const (
	tagNet, tagWritable, tagReadOnly, tagMaskDir, tagMaskFile   = 'n', 'w', 'r', 'd', 'f'
	tagDir, tagPath, tagArg, tagEnv, tagExitWithMain            = 'c', 'p', 'a', 'e', 'x'
	tagFilter, tagLandlock                                      = 'F', 'l'
	tagProbeOutside, tagProbeInside, tagProbeMasked, tagProbeRO = 'P', 'I', 'M', 'R'
)

// Encode serializes s for the init.
func Encode(s *Spec) []byte {
	var b []byte
	put := func(tag byte, v []byte) {
		b = append(b, tag)
		n := uint64(len(v))
		for n >= 0x80 {
			b = append(b, byte(n)|0x80)
			n >>= 7
		}
		b = append(b, byte(n))
		b = append(b, v...)
	}
	str := func(tag byte, v string) { put(tag, []byte(v)) }
	strs := func(tag byte, vs []string) {
		for _, v := range vs {
			str(tag, v)
		}
	}
	str(tagNet, s.Net)
	strs(tagWritable, s.Writable)
	strs(tagReadOnly, s.ReadOnly)
	strs(tagMaskDir, s.MaskDirs)
	strs(tagMaskFile, s.MaskFiles)
	str(tagDir, s.Dir)
	str(tagPath, s.Path)
	strs(tagArg, s.Args)
	strs(tagEnv, s.Env)
	if s.ExitWithMain {
		put(tagExitWithMain, nil)
	}
	f := make([]byte, 0, 8*len(s.Filter))
	for _, in := range s.Filter {
		f = append(f, byte(in[0]), byte(in[0]>>8), byte(in[1]), byte(in[2]), byte(in[3]), byte(in[3]>>8), byte(in[3]>>16), byte(in[3]>>24))
	}
	put(tagFilter, f)
	if s.Landlock {
		x := s.LandlockFlags
		put(tagLandlock, []byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
	}
	if p := s.Probe; p != nil {
		str(tagProbeOutside, p.Outside)
		str(tagProbeInside, p.Inside)
		str(tagProbeMasked, p.Masked)
		str(tagProbeRO, p.ReadOnly)
	}
	return b
}

// Decode parses what Encode wrote.
func Decode(b []byte) (*Spec, error) {
	s := &Spec{}
	for len(b) > 0 {
		tag := b[0]
		b = b[1:]
		var n uint64
		var shift uint
		for i := 0; ; i++ {
			if i >= len(b) || i > 9 {
				return nil, errors.New("spec: truncated length")
			}
			c := b[i]
			n |= uint64(c&0x7f) << shift
			shift += 7
			if c < 0x80 {
				b = b[i+1:]
				break
			}
		}
		if n > uint64(len(b)) {
			return nil, errors.New("spec: truncated record " + strconv.Quote(string(tag)))
		}
		v := b[:n]
		b = b[n:]
		probe := func() *Probe {
			if s.Probe == nil {
				s.Probe = &Probe{}
			}
			return s.Probe
		}
		switch tag {
		case tagNet:
			s.Net = string(v)
		case tagWritable:
			s.Writable = append(s.Writable, string(v))
		case tagReadOnly:
			s.ReadOnly = append(s.ReadOnly, string(v))
		case tagMaskDir:
			s.MaskDirs = append(s.MaskDirs, string(v))
		case tagMaskFile:
			s.MaskFiles = append(s.MaskFiles, string(v))
		case tagDir:
			s.Dir = string(v)
		case tagPath:
			s.Path = string(v)
		case tagArg:
			s.Args = append(s.Args, string(v))
		case tagEnv:
			s.Env = append(s.Env, string(v))
		case tagExitWithMain:
			s.ExitWithMain = true
		case tagFilter:
			if len(v)%8 != 0 {
				return nil, errors.New("spec: bad filter")
			}
			for i := 0; i < len(v); i += 8 {
				s.Filter = append(s.Filter, [4]uint32{uint32(v[i]) | uint32(v[i+1])<<8, uint32(v[i+2]), uint32(v[i+3]),
					uint32(v[i+4]) | uint32(v[i+5])<<8 | uint32(v[i+6])<<16 | uint32(v[i+7])<<24})
			}
		case tagLandlock:
			if len(v) != 4 {
				return nil, errors.New("spec: bad landlock flags")
			}
			s.Landlock, s.LandlockFlags = true, uint32(v[0])|uint32(v[1])<<8|uint32(v[2])<<16|uint32(v[3])<<24
		case tagProbeOutside:
			probe().Outside = string(v)
		case tagProbeInside:
			probe().Inside = string(v)
		case tagProbeMasked:
			probe().Masked = string(v)
		case tagProbeRO:
			probe().ReadOnly = string(v)
		default:
			return nil, errors.New("spec: unknown record " + strconv.Quote(string(tag)))
		}
	}
	return s, nil
}
