// Package rocegen generates synthetic RoCE captures: the small sample
// shipped as roce/testdata/sample.pcapng (RoCE v1 and v2, IPv4 and IPv6,
// untagged and tagged, a CNP, a frame with a bad ICRC and a non-RoCE
// frame) and large captures for benchmarks. Frames are built with
// roce.SerializeFrame, so their ICRCs are valid unless broken on purpose.
package rocegen
