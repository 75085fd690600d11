package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// Writing a small synthetic capture and reading it back with roce/.
func Example() {
	dir, _ := os.MkdirTemp("", "rocegen")
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "three.pcap")
	os.Args = []string{"rocegen", "-n", "3", "-o", out}
	main()

	f, _ := os.Open(out)
	defer f.Close()
	r, err := capture.NewReader(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	dec := roce.NewDecoder()
	var p roce.Packet
	for {
		data, _, err := r.Next()
		if err != nil {
			break
		}
		if err := dec.Decode(data, &p); err == nil {
			fmt.Println(r.Format(), p.BTH.Opcode, p.ICRCStatus)
		}
	}
	// Output:
	// pcap UD_SEND_ONLY valid
	// pcap UD_SEND_ONLY valid
	// pcap UD_SEND_ONLY valid
}
