package verbs_test

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/roce-probe/roce-probe/internal/verbs"
)

// A failed ibv_create_ah comes back as *verbs.Error: the errno stays
// testable with errors.Is and the message says what it means on RoCE.
func ExampleError() {
	var err error = &verbs.Error{Op: "ibv_create_ah", Errno: syscall.ETIMEDOUT, Detail: "rxe0 port 1 sgid_index=1"}
	fmt.Println(errors.Is(err, syscall.ETIMEDOUT))
	fmt.Println(err.(*verbs.Error).Op, verbs.Hint("ibv_create_ah", syscall.ENODATA))
	// Output:
	// true
	// ibv_create_ah ENODATA: sgid_index names an empty GID table entry (or one being deleted); list the table with 'roce-probe gids'
}
