package errno_test

import (
	"fmt"
	"syscall"

	"github.com/roce-probe/roce-probe/internal/errno"
)

func Example() {
	fmt.Println(errno.Name(syscall.ENETUNREACH))
	fmt.Println(errno.Name(syscall.ETIMEDOUT))
	// Output:
	// ENETUNREACH
	// ETIMEDOUT
}
