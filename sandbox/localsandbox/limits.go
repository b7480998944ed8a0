package localsandbox

// Adapter defaults for the file operations. Request fields left at zero take
// these; Options fields left at zero take the Options defaults below.
const (
	defaultListEntries   = 1000      // ListRequest.MaxEntries
	defaultReadLines     = 2000      // ReadRequest.Limit, lines
	defaultLineChars     = 2000      // ReadRequest.MaxLineChars, characters
	defaultReadBytes     = 256 << 10 // ReadRequest.MaxBytes, bytes of line text
	defaultImageBytes    = 5 << 20   // ReadRequest.MaxImageBytes, bytes
	defaultSearchResults = 100       // SearchRequest.MaxResults
	defaultMatchChars    = 400       // SearchRequest.MaxLineChars, characters
	defaultEditBytes     = 64 << 20  // Options.MaxEditBytes
	defaultCountBytes    = 64 << 20  // Options.MaxCountBytes
	defaultSearchLine    = 1 << 20   // Options.MaxSearchLineBytes
	searchLineOverlap    = 4 << 10   // bytes shared by consecutive grep windows of one long line
	sniffBytes           = 8 << 10   // bytes inspected for binary / image / encoding detection
	defaultPathDepth     = 256       // Options.MaxPathDepth, components
	defaultPathBytes     = 4096      // Options.MaxPathBytes, bytes (PATH_MAX on Linux)
	defaultReadScanBytes = 64 << 20  // Options.MaxReadBytes
	ctxCheckEvery        = 256       // loop iterations between ctx checks
	regionContext        = 3         // lines of context around an edit in EditResult.Region
	maxRegionLines       = 40        // lines in EditResult.Region at most
	regionLineChars      = 2000      // characters kept per Region line
	readBufBytes         = 64 << 10  // bufio buffer for streaming reads
	maxCandidates        = 3         // EditError.Candidates at most
	maxMatchLines        = 100       // EditError.MatchLines at most
	maxCandidateChars    = 160       // characters of a quoted line in a candidate
)

func (s *Sandbox) maxEditBytes() int64 {
	if s.opts.MaxEditBytes > 0 {
		return s.opts.MaxEditBytes
	}
	return defaultEditBytes
}

func (s *Sandbox) maxCountBytes() int64 {
	if s.opts.MaxCountBytes > 0 {
		return s.opts.MaxCountBytes
	}
	return defaultCountBytes
}

func (s *Sandbox) maxPathDepth() int { return orDefault(s.opts.MaxPathDepth, defaultPathDepth) }

func (s *Sandbox) maxPathBytes() int { return orDefault(s.opts.MaxPathBytes, defaultPathBytes) }

func (s *Sandbox) maxReadBytes() int64 { return orDefault(s.opts.MaxReadBytes, defaultReadScanBytes) }

func (s *Sandbox) maxSearchLineBytes() int {
	if s.opts.MaxSearchLineBytes > 0 {
		return max(s.opts.MaxSearchLineBytes, 2*searchLineOverlap)
	}
	return defaultSearchLine
}

func orDefault[T int | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
