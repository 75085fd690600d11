package capture

// SetSplit lets tests make Summarize cut small captures: a capture of
// minBytes or more is cut into chunks of at least minChunk bytes (up to
// splitPerCore per core). It returns a function restoring the old values.
func SetSplit(minBytes, minChunk int64) (restore func()) {
	oldBytes, oldChunk := splitMinBytes, splitMinChunk
	splitMinBytes, splitMinChunk = minBytes, minChunk
	return func() { splitMinBytes, splitMinChunk = oldBytes, oldChunk }
}

// SplitCount is how many times Summarize summarised a capture in chunks.
func SplitCount() int64 { return splitCount.Load() }

// ChunkCount is how many chunks Summarize has summarised, in all.
func ChunkCount() int64 { return chunkCount.Load() }

// SetMapFiles turns mapping pcap capture files on or off; it returns a
// function restoring the old value.
func SetMapFiles(on bool) (restore func()) {
	old := mapFiles
	mapFiles = on
	return func() { mapFiles = old }
}

// MappedCount is how many captures Summarize summarised from a mapped file.
func MappedCount() int64 { return mappedCount.Load() }
