//go:build linux

package lab

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// KernelFacts is what the lab measured of one kernel's Soft-RoCE stack:
// the behaviour that differs between the kernels the lab runs (Debian's
// 6.1 and 7.x). Lab tests assert these per kernel; docs/lab.md has the
// table. A fact changes only when the lab measures something else.
type KernelFacts struct {
	// Series is the kernel series the facts were measured on, "6.1" or "7".
	Series string
	// Measured is the release the facts come from.
	Measured string
	// RXEInNetns: an rxe device created (rdma link add) inside a network
	// namespace other than the initial one carries RC and rdma_cm traffic.
	// On 6.1 the device is created but an RC connection through it fails
	// (IBV_WC_LOC_QP_OP_ERR) and rdma_cm reports RDMA_CM_EVENT_UNREACHABLE.
	RXEInNetns bool
	// HWCounters are the names in /sys/class/infiniband/DEV/ports/1/hw_counters.
	HWCounters []string
	// PMACounters are the names in /sys/class/infiniband/DEV/ports/1/counters
	// (IB PMA counters; none on 6.1, where rxe has no process_mad). rxe
	// fills only four of them (drivers/infiniband/sw/rxe/rxe_mad.c): the
	// others read 0 whatever the traffic.
	PMACounters []string
}

// rxe hw_counters, from drivers/infiniband/sw/rxe/rxe_hw_counters.c
// (rxe_counter_name) of each kernel, as sysfs listed them in the lab.
var (
	hwCounters61 = []string{"ack_deferred", "completer_retry_err", "duplicate_request", "lifespan", "link_downed",
		"out_of_seq_request", "rcvd_pkts", "rcvd_rnr_err", "rcvd_seq_err", "rdma_recvs", "rdma_sends",
		"retry_exceeded_err", "retry_rnr_exceeded_err", "send_err", "send_rnr_err", "sent_pkts"}
	hwCounters7 = []string{"ack_deferred", "completer_retry_err", "duplicate_request", "lifespan", "link_downed",
		"out_of_seq_request", "rcvd_bytes", "rcvd_pkts", "rcvd_rnr_err", "rcvd_seq_err", "rdma_recvs", "rdma_sends",
		"retry_exceeded_err", "retry_rnr_exceeded_err", "send_err", "send_rnr_err", "sent_bytes", "sent_pkts"}
)

// rxe's counters/ on 7.x: ib core's pma_attrs_ext
// (drivers/infiniband/core/sysfs.c, get_counter_table picks it because
// rxe_get_pma_info sets IB_PMA_CLASS_CAP_EXT_WIDTH), as sysfs listed them
// in the lab on 7.3.4.
var pmaCounters7 = []string{"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
	"local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets", "port_rcv_constraint_errors",
	"port_rcv_data", "port_rcv_errors", "port_rcv_packets", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
	"port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait",
	"symbol_error", "unicast_rcv_packets", "unicast_xmit_packets"}

var kernelFacts = []KernelFacts{
	{Series: "6.1", Measured: "6.1.0-56-amd64 (6.1.192)", RXEInNetns: false, HWCounters: hwCounters61},
	{Series: "7", Measured: "7.3.4+deb13-amd64", RXEInNetns: true, HWCounters: hwCounters7, PMACounters: pmaCounters7},
}

// KernelRelease returns the running kernel's release (uname -r).
func KernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// Facts returns the lab's measurements for the running kernel.
func Facts() (KernelFacts, error) { return FactsFor(KernelRelease()) }

// FactsFor returns the lab's measurements for a kernel release: those of
// its series (6.1 for 6.1.y; 7 for any 7.x, measured on 7.3). A release
// the lab never measured is an error.
func FactsFor(release string) (KernelFacts, error) {
	major, rest, _ := strings.Cut(release, ".")
	minor, _, _ := strings.Cut(rest, ".")
	minor, _, _ = strings.Cut(minor, "-")
	if _, err := strconv.Atoi(major); err != nil {
		return KernelFacts{}, fmt.Errorf("lab: kernel release %q: want MAJOR.MINOR...", release)
	}
	for _, f := range kernelFacts {
		if f.Series == major+"."+minor || f.Series == major {
			return f, nil
		}
	}
	return KernelFacts{}, fmt.Errorf("lab: no measurements of Linux %s.%s (release %s): the lab knows 6.1 and 7.x; measure this kernel and add it to kernelFacts", major, minor, release)
}
