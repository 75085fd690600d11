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
