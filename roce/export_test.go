package roce

// SetSplitMinBytes lets tests make Summarize cut small captures into
// segments; it returns a function restoring the old value, and a function
// reporting how many Summarize calls cut the capture successfully.
func SetSplitMinBytes(n int64) (restore func()) {
	old := splitMinBytes
	splitMinBytes = n
	return func() { splitMinBytes = old }
}

// SplitCount is how many times Summarize summarised a capture in
// segments.
func SplitCount() int64 { return splitCount.Load() }
