package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/roce-probe/roce-probe/internal/rocegen"
)

func main() {
	sample := flag.Bool("sample", false, "write the sample capture (v1+v2, v4+v6, tagged/untagged, a CNP, a bad ICRC, a non-RoCE frame)")
	n := flag.Int("n", 0, "write N synthetic RoCE v2 frames")
	out := flag.String("o", "", "output file (.pcap or .pcapng)")
	flag.Parse()
	if *out == "" || (*sample == (*n > 0)) || *n < 0 {
		fmt.Fprintln(os.Stderr, "usage: rocegen (-sample | -n N) -o FILE.pcapng|FILE.pcap")
		os.Exit(2)
	}
	frames := rocegen.Sample()
	if !*sample {
		frames = rocegen.Synthetic(*n)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rocegen:", err)
		os.Exit(2)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	write := rocegen.WritePcapNG
	if strings.HasSuffix(*out, ".pcap") {
		write = rocegen.WritePcap
	}
	if err := write(w, frames); err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rocegen:", err)
		os.Exit(1)
	}
}
