package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/collect"
)

func init() { register(newQPsCmd) }

func newQPsCmd() *cobra.Command {
	var src hostFlags
	var format string
	var raw bool
	c := &cobra.Command{
		Use:   "qps [--dev D] [--raw]",
		Short: "List the queue pairs and rdma_cm IDs with the processes that own them",
		Long: `qps lists every queue pair (QP) and rdma_cm ID of the host's RDMA devices, as
the kernel's RDMA netlink resource dumps report them (what 'rdma resource show
qp' and 'rdma resource show cm_id' print): per QP the device, port, QPN, type,
state, remote QPN, PSNs, and the PID and command of the process that owns it
(or the kernel module, for kernel QPs); per rdma_cm ID its port space, state,
source and destination addresses, QP and owner; the driver's attributes where
it adds some.

Reads need no privileges. The kernel gives a PID in the reader's PID
namespace: QPs of processes it cannot see (another container's) are listed
without an owner, and qps says so. --raw also reads the drivers' raw QP
contexts (RDMA_NLDEV_CMD_RES_QP_GET_RAW), which needs CAP_NET_ADMIN (root);
rxe has none. No driver reports a QP's traffic class, SL or DSCP in these
dumps: 'roce-probe audit' reads them from the wire.

--from FILE reads the census of a snapshot written by 'roce-probe collect'
instead of the live host. See docs/qps.md.`,
		Example: `  roce-probe qps
  roce-probe qps --dev mlx5_0 -o json
  sudo roce-probe qps --raw -o json
  roce-probe qps --from node1.json.gz`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := readQPs(&src, raw)
			if err != nil {
				return err
			}
			if format == "json" {
				return writeJSONIndent(cmd.OutOrStdout(), c)
			}
			writeQPsTable(cmd.OutOrStdout(), c)
			return nil
		},
	}
	src.add(c, hostFlagSet{dev: true, noNetns: true, devUsage: "only this RDMA device (e.g. mlx5_0, rxe0)"})
	c.Flags().BoolVar(&raw, "raw", false, "also read the drivers' raw QP contexts (needs CAP_NET_ADMIN; live only)")
	outputVar(c.Flags(), &format, "table", "json")
	return c
}

// readQPs is the census --from's snapshot holds, or the live host's, of
// --dev's device or every device.
func readQPs(src *hostFlags, raw bool) (*census.Census, error) {
	if src.from == "" {
		opt := collect.CensusOptions{Raw: raw}
		if src.dev != "" {
			opt.Devices = []string{src.dev}
		}
		c, err := collect.Census(opt)
		switch {
		case errors.Is(err, collect.ErrNotLinux):
			return nil, liveError("", err)
		case err != nil:
			return nil, usagef("--dev %q: %v", src.dev, err)
		}
		return c, nil
	}
	if raw {
		return nil, usagef("--raw reads the live host's raw QP contexts: it cannot be given with --from")
	}
	s, err := src.snapshot(0)
	if err != nil {
		return nil, err
	}
	if s.Census == nil {
		return nil, usagef("--from %q: the snapshot has no census (written by a roce-probe before 'qps' existed, or from a copy of /sys): take one with 'roce-probe collect' on the host", src.from)
	}
	if src.dev == "" {
		return s.Census, nil
	}
	var devs []string
	if s.RDMA != nil {
		for _, d := range s.RDMA.Devices {
			if d.Name == src.dev {
				return s.Census.Filter(src.dev), nil
			}
			devs = append(devs, d.Name)
		}
	}
	if len(devs) == 0 {
		return nil, usagef("--dev %q: no such RDMA device: %s", src.dev, src.noRDMA())
	}
	return nil, usagef("--dev %q: no such RDMA device in the snapshot: want one of %s", src.dev, strings.Join(devs, ", "))
}

func writeQPsTable(w io.Writer, c *census.Census) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tPORT\tQPN\tTYPE\tSTATE\tDEST_QP\tSQ_PSN\tRQ_PSN\tPID\tCOMM")
	for _, q := range c.QPs {
		typ := q.Type
		if q.Subtype != "" {
			typ += "/" + q.Subtype
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", q.Device, portCol(q.Port), q.QPN, typ, q.State,
			ptrOr(q.DestQP, "-", u32Text), q.SQPSN, ptrOr(q.RQPSN, "-", u32Text), pidCol(q.Owner, q.PID), commCol(q.Owner, q.Comm))
	}
	tw.Flush()
	if len(c.CMIDs) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "DEVICE\tPORT\tCM_ID\tQPN\tPS\tSTATE\tSRC\tDST\tPID\tCOMM")
		for _, id := range c.CMIDs {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id.Device, portCol(id.Port), id.ID, ptrOr(id.QPN, "-", u32Text),
				id.PortSpace, id.State, addrCol(id.Src.String(), id.Src.IsValid()), addrCol(id.Dst.String(), id.Dst.IsValid()),
				pidCol(id.Owner, id.PID), commCol(id.Owner, id.Comm))
		}
		tw.Flush()
	}
	for _, r := range c.RawQPs {
		fmt.Fprintf(w, "# raw QP context of %s port %s: %d bytes\n", r.Device, portCol(r.Port), len(r.Data))
	}
	for _, s := range c.Sources {
		if s.Status == census.StatusRead {
			continue
		}
		on := ""
		if s.Device != "" {
			on = " of " + s.Device
		}
		fmt.Fprintf(w, "# %s%s: %s: %s\n", s.Source, on, s.Status, s.Reason)
	}
}

func u32Text(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

func portCol(p int) string {
	if p == 0 {
		return "-"
	}
	return strconv.Itoa(p)
}

func pidCol(owner string, pid int) string {
	switch {
	case owner == census.OwnerKernel:
		return "kernel"
	case pid == 0:
		return "?"
	}
	return strconv.Itoa(pid)
}

// commCol is the command as iproute2 prints it: a kernel owner's name in
// brackets.
func commCol(owner, comm string) string {
	switch {
	case comm == "":
		return "-"
	case owner == census.OwnerKernel:
		return "[" + comm + "]"
	}
	return comm
}

func addrCol(s string, ok bool) string {
	if !ok {
		return "-"
	}
	return s
}
