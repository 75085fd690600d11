package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/rocegen"
)

var (
	bigCaptureOnce sync.Once
	bigCapturePath string
	bigCaptureErr  error
)

// bigCapture writes a 100,000-frame synthetic RoCE v2 capture once per run.
func bigCapture(b *testing.B) string {
	bigCaptureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "roce-bench")
		if err != nil {
			bigCaptureErr = err
			return
		}
		bigCapturePath = filepath.Join(dir, "roce-100k.pcapng")
		f, err := os.Create(bigCapturePath)
		if err != nil {
			bigCaptureErr = err
			return
		}
		w := bufio.NewWriter(f)
		frames := rocegen.Synthetic(100000)
		if bigCaptureErr = rocegen.WritePcapNG(w, frames); bigCaptureErr == nil {
			bigCaptureErr = w.Flush()
		}
		f.Close()
		if bigCaptureErr != nil {
			return
		}
		// the same frames as classic pcap, next to it
		if f, bigCaptureErr = os.Create(strings.TrimSuffix(bigCapturePath, "ng")); bigCaptureErr != nil {
			return
		}
		w = bufio.NewWriter(f)
		if bigCaptureErr = rocegen.WritePcap(w, frames); bigCaptureErr == nil {
			bigCaptureErr = w.Flush()
		}
		f.Close()
	})
	if bigCaptureErr != nil {
		b.Fatal(bigCaptureErr)
	}
	return bigCapturePath
}

// BenchmarkDecodeSummary100k runs `roce-probe decode --summary` in-process
// on a 100,000-frame capture (one op = the whole file), pcapng and pcap.
func BenchmarkDecodeSummary100k(b *testing.B) {
	b.Run("pcapng", func(b *testing.B) { benchDecodeSummary(b, bigCapture(b)) })
	b.Run("pcap", func(b *testing.B) { benchDecodeSummary(b, strings.TrimSuffix(bigCapture(b), "ng")) })
}

func benchDecodeSummary(b *testing.B, path string) {
	cpu0 := cpuTime()
	for b.Loop() {
		if code := run([]string{"decode", "--summary", path}, nil, io.Discard, io.Discard); code != exitOK {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTsharkRead100k runs `tshark -r` on the same capture, for the
// ≥ 50× comparison in docs/performance.md. Skipped without tshark.
func BenchmarkTsharkRead100k(b *testing.B) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		b.Skip("tshark not installed")
	}
	path := bigCapture(b)
	for b.Loop() {
		cmd := exec.Command(tshark, "-r", path)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}
