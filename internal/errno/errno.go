package errno

import (
	"fmt"
	"syscall"
)

// Name returns e's symbolic name ("EINVAL", "ETIMEDOUT", ...), or "errno N"
// for one roce-probe has no reason to meet.
func Name(e syscall.Errno) string {
	switch e {
	case syscall.EINVAL:
		return "EINVAL"
	case syscall.ENODATA:
		return "ENODATA"
	case syscall.ETIMEDOUT:
		return "ETIMEDOUT"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.ENOMEM:
		return "ENOMEM"
	case syscall.ENODEV:
		return "ENODEV"
	case syscall.EPERM:
		return "EPERM"
	case syscall.EACCES:
		return "EACCES"
	case syscall.EAGAIN:
		return "EAGAIN"
	case syscall.EBUSY:
		return "EBUSY"
	case syscall.ENETUNREACH:
		return "ENETUNREACH"
	case syscall.EHOSTUNREACH:
		return "EHOSTUNREACH"
	case syscall.EADDRNOTAVAIL:
		return "EADDRNOTAVAIL"
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.EAFNOSUPPORT:
		return "EAFNOSUPPORT"
	case syscall.EPROTONOSUPPORT:
		return "EPROTONOSUPPORT"
	case syscall.EPROTOTYPE:
		return "EPROTOTYPE"
	case syscall.ENOSYS:
		return "ENOSYS"
	}
	return fmt.Sprintf("errno %d", int(e))
}
