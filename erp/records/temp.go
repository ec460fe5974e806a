package records

import (
	"context"
	"errors"
	"os"
)

// OpenTemp opens a SQLite store in a new temporary directory, for tools
// and runs that need the gateway's records only while they last. Closing
// the returned store removes the directory.
func OpenTemp(ctx context.Context, opts Options) (Store, error) {
	dir, err := os.MkdirTemp("", "erpgate-records-")
	if err != nil {
		return nil, err
	}
	s, err := OpenDir(ctx, dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &tempStore{Store: s, dir: dir}, nil
}

// tempStore removes its directory when closed.
type tempStore struct {
	Store
	dir string
}

func (t *tempStore) Close() error {
	return errors.Join(t.Store.Close(), os.RemoveAll(t.dir))
}
