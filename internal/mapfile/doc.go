// Package mapfile maps a file read-only into memory where the system can
// (mmap on Unix), for readers that walk a whole file in place: roce/capture
// summarising a pcap capture, and internal/cmd/capfloor measuring what
// that mapping costs. Where the system cannot, Map returns nil and the
// caller reads the file.
package mapfile
