package testenv_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

func ExampleLookup() {
	_, err := testenv.Lookup("roce-probe-no-such-tool")
	fmt.Println(err)
	// Output:
	// roce-probe-no-such-tool is not installed (Debian package roce-probe-no-such-tool; scripts/deps.sh installs it)
}

func ExampleParseTsharkFields() {
	// what `tshark -T fields -E separator=/t -e vlan.id -e infiniband.bth.psn`
	// prints for an untagged frame and a tagged one
	rows, err := testenv.ParseTsharkFields("\t42\n100\t43\n", "vlan.id", "infiniband.bth.psn")
	fmt.Println(len(rows), rows[0]["vlan.id"] == "", rows[1]["vlan.id"], rows[1]["infiniband.bth.psn"], err)
	_, err = testenv.ParseTsharkFields("100\n", "vlan.id", "infiniband.bth.psn")
	fmt.Println(err)
	// Output:
	// 2 true 100 43 <nil>
	// line 1 has 1 values for the 2 fields [vlan.id infiniband.bth.psn]: "100"
}
