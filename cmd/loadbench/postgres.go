package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// postgresBinDir returns the directory of PostgreSQL's initdb and pg_ctl:
// the one on PATH, else the newest under /usr/lib/postgresql, else "".
func postgresBinDir() string {
	if p, err := exec.LookPath("initdb"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r)
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(found, func(a, b string) int { return majorOf(a) - majorOf(b) })
	if len(found) == 0 {
		return ""
	}
	return filepath.Dir(found[len(found)-1])
}

// majorOf is the major version in /usr/lib/postgresql/<major>/bin/initdb.
func majorOf(p string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(p))))
	return n
}

// throwawayPostgres is a PostgreSQL cluster of the bench's own, in a
// temporary directory on a free loopback port, with the server's default
// durability (fsync and synchronous commit on).
type throwawayPostgres struct {
	bin, dir, url, version string
	asPostgres             bool // the bench runs as root: the server as the postgres user
}

// startPostgres initialises and starts a throwaway cluster, as .ci/test.sh
// does for the tests; stop removes it.
func startPostgres(ctx context.Context, bin string) (*throwawayPostgres, error) {
	p := &throwawayPostgres{bin: bin, asPostgres: os.Geteuid() == 0}
	// Under /tmp, not $TMPDIR: the postgres user must reach it.
	dir, err := os.MkdirTemp("/tmp", "loadbench-pg-")
	if err != nil {
		return nil, err
	}
	p.dir = dir
	if p.asPostgres {
		u, err := user.Lookup("postgres")
		if err != nil {
			p.stop()
			return nil, errors.New("running as root and there is no postgres user to run the server as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			p.stop()
			return nil, err
		}
	}
	if out, err := p.command(ctx, "initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C").CombinedOutput(); err != nil {
		p.stop()
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var lastErr error
	for range 5 {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		port := addr[strings.LastIndexByte(addr, ':')+1:]
		out, err := p.command(ctx, "pg_ctl", "-D", p.data(), "-l", filepath.Join(dir, "server.log"), "-w", "-t", "30",
			"-o", "-c listen_addresses=127.0.0.1 -p "+port+" -k "+dir+" -c max_connections=200", "start").CombinedOutput()
		if err == nil {
			p.url = "postgres://postgres@127.0.0.1:" + port + "/postgres?sslmode=disable"
			v, _ := exec.CommandContext(ctx, filepath.Join(bin, "postgres"), "--version").Output()
			// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
			if f := strings.Fields(string(v)); len(f) > 2 {
				p.version = f[2]
			}
			return p, nil
		}
		lastErr = fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	p.stop()
	return nil, lastErr
}

func (p *throwawayPostgres) data() string { return filepath.Join(p.dir, "data") }

// command runs a PostgreSQL program, as the postgres user when the bench
// runs as root (the server refuses to run as root).
func (p *throwawayPostgres) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, name), args...)
	cmd.Env = environWithout("PG")
	if p.asPostgres {
		u, _ := user.Lookup("postgres")
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	return cmd
}

// stop stops the server at once and removes the cluster.
func (p *throwawayPostgres) stop() {
	if p.url != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = p.command(ctx, "pg_ctl", "-D", p.data(), "-m", "immediate", "-w", "stop").Run()
		cancel()
	}
	_ = os.RemoveAll(p.dir)
}

// freshDatabase creates an empty database on the PostgreSQL server of
// adminURL and returns its URL and a function that drops it, so that
// every part of the bench starts from no records.
func freshDatabase(ctx context.Context, adminURL, name string) (string, func(), error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", nil, errors.New("the PostgreSQL URL does not parse")
	}
	db, err := sql.Open("pgx", adminURL)
	if err != nil {
		return "", nil, err
	}
	name = fmt.Sprintf("%s_%d", name, time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}
