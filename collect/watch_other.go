//go:build !linux

package collect

// Watch returns an error wrapping ErrNotLinux: rtnetlink is Linux's.
func Watch(netnsName string, done <-chan struct{}) (*Watcher, error) { return nil, errNotLinux }
