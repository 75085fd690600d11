package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/roce-probe/roce-probe/internal/fleetsim"
)

func main() {
	n := flag.Int("nics", 32000, "NICs in the fleet (one agent each)")
	seed := flag.Uint64("seed", 1, "the run's seed")
	epochs := flag.Int("epochs", 7, "epochs of faults")
	per := flag.Int("faults", 15, "faults per epoch")
	prof := flag.String("cpuprofile", "", "write a CPU profile to this file")
	verbose := flag.Bool("v", false, "list every fault and when it was seen")
	flag.Parse()
	if *prof != "" {
		w, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleetsim:", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(w); err != nil {
			fmt.Fprintln(os.Stderr, "fleetsim:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	cfg := fleetsim.DefaultConfig(*n)
	cfg.Seed, cfg.Epochs, cfg.FaultsPerEpoch = *seed, *epochs, *per
	start := time.Now()
	res, err := fleetsim.Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetsim:", err)
		os.Exit(2)
	}
	res.WriteSummary(os.Stdout, cfg)
	if *verbose {
		for _, f := range res.Faults {
			fmt.Printf("%v: evidence after %v, named after %v\n", f.Fault, f.Evidence, f.Detected)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("simulation: %v wall, heap %d MiB (Go runtime's HeapSys), %d MiB allocated in all\n", time.Since(start).Round(time.Millisecond), ms.HeapSys>>20, ms.TotalAlloc>>20)
}
