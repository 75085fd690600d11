// Command rocegen writes synthetic RoCE captures: the sample shipped in
// roce/testdata (-sample) or a large capture for benchmarks (-n N).
//
//	go run ./internal/cmd/rocegen -sample -o roce/testdata/sample.pcapng
//	go run ./internal/cmd/rocegen -n 100000 -o /tmp/roce-100k.pcapng
package main
