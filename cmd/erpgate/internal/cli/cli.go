// Package cli holds what erpgate's subcommands share on the command line:
// the mistake of syntax main exits with status 2 for, and the parsing of
// flags that reports it.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// UsageError is a mistake on the command line, such as an unknown flag or
// a flag without its value. main prints it on one line and exits with
// status 2.
type UsageError struct {
	Err  error
	Hint string // such as "run erpgate -h for the flags"
}

func (e *UsageError) Error() string { return fmt.Sprintf("%v (%s)", e.Err, e.Hint) }
func (e *UsageError) Unwrap() error { return e.Err }

// ParseFlags parses args with fs without letting the flag package print a
// mistake and the whole usage: -h or -help prints the usage (fs.Usage, or
// the defaults to fs.Output()) and returns flag.ErrHelp; any other mistake
// comes back as a *UsageError telling to run helpCmd.
func ParseFlags(fs *flag.FlagSet, args []string, helpCmd string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return err
	}
	return &UsageError{Err: err, Hint: "run " + helpCmd + " for the flags"}
}
