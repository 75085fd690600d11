package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command.
const (
	exitOK      = 0 // success (for check: lossless)
	exitFinding = 1 // the command ran and found a problem (bad ICRC, lossy, ...)
	exitUsage   = 2 // bad flags or input, unreadable files, unknown devices
)

// usageError is an error caused by the user's input; it exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError. Name the flag, the value and what is allowed:
// usagef("--sl %d is out of range: want 0..15", sl).
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// findingError makes the command exit 1 after it has printed its output.
// A non-empty message is printed to stderr.
type findingError struct{ msg string }

func (e findingError) Error() string { return e.msg }

// subcommands are registered by each command's file in its init function.
var subcommands []func() *cobra.Command

func register(f func() *cobra.Command) { subcommands = append(subcommands, f) }

// newRoot builds a fresh command tree, so tests can run commands in-process.
func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "roce-probe",
		Short: "Show what RDMA traffic looks like on Ethernet, and check it on the wire",
		Long: `roce-probe makes the RoCE chain explicit: GID table entries and their netdevs,
VLAN tags and priorities, DSCP/ECN, address handles and the exact frames they
produce. Read-only commands need no root.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: checkEmptyFlags,
		// An argument is a misspelt command (rootArgs); no argument
		// prints the help, as a command that only groups others does.
		Args: rootArgs,
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagError)
	for _, f := range subcommands {
		root.AddCommand(f())
	}
	// cobra's own commands: an unknown shell or help topic is bad input
	// too, not a reason to print help and exit 0.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args, c.RunE = subcommandArgs, needsSubcommand
			c.Example = completionExamples
			for _, shell := range c.Commands() {
				shell.Args = noArgs
				shell.Example = "  " + strings.ReplaceAll(shellExamples[shell.Name()], "\n", "\n  ")
			}
		}
	}
	setOnce(root)
	checkGroupsFirst(root)
	registerCompletions(root)
	setVersionFlag(root)
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("help %q: no such command: want one of %s", strings.Join(args, " "), subcommandNames(c.Root()))
			}
			return cmd.Help()
		},
	})
	return root
}

// run executes the CLI and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext is run with a context that ends long-running commands (listen)
// as an interrupt would; tests use it to stop an in-process listener.
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	if completing(args) {
		forCompletion(root)
	}
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var fe findingError
	if errors.As(err, &fe) {
		if fe.msg != "" {
			fmt.Fprintln(stderr, "roce-probe:", fe.msg)
		}
		return exitFinding
	}
	// Everything else is bad input or what exitUsage also covers
	// (unreadable files, unknown devices, a missing capability).
	// One line, even when a value or path in the message holds a newline.
	fmt.Fprintln(stderr, "roce-probe:", strings.ReplaceAll(err.Error(), "\n", `\n`))
	return exitUsage
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeJSONIndent writes v as indented JSON (for documents rather than streams).
func writeJSONIndent(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
