package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// raiseOpenFiles lifts the soft limit on open files to the hard one, for
// the bench's connections and, inherited, its children's. It returns the
// new limit.
func raiseOpenFiles() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// rss returns a process's resident memory in bytes, from VmRSS in
// /proc/<pid>/status.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v) // "12345 kB"
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// treeRSS sums the resident memory of a process and its children, as for
// nginx's master and workers.
func treeRSS(pid int) (int64, error) {
	total, err := rss(pid)
	if err != nil {
		return 0, err
	}
	for _, k := range children(pid) {
		if r, err := rss(k); err == nil {
			total += r
		}
	}
	return total, nil
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat on Linux.
const userHZ = 100

// cpuTime returns the CPU time (user and system) a process has used, with
// its children's when tree is set, as for nginx's master and workers: the
// scheduler's count of its threads' time on a CPU, in nanoseconds, where
// the kernel keeps it (schedstat), else the ticks of /proc/<pid>/stat,
// which are sampled 100 times a second and move a one-second figure by
// several percent.
func cpuTime(pid int, tree bool) (time.Duration, error) {
	total, err := onCPU(pid)
	if err != nil {
		if total, err = statCPU(pid); err != nil {
			return 0, err
		}
	}
	if tree {
		for _, k := range children(pid) {
			if c, err := cpuTime(k, false); err == nil {
				total += c
			}
		}
	}
	return total, nil
}

// onCPU is the time the threads of a process have run on a CPU, from the
// first field of each /proc/<pid>/task/<tid>/schedstat.
func onCPU(pid int) (time.Duration, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue // the thread has just ended
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad schedstat of %d: %q", pid, b)
		}
		total += time.Duration(ns)
	}
	if total == 0 {
		return 0, fmt.Errorf("no schedstat of %d", pid)
	}
	return total, nil
}

// statCPU is the user and system time of a process in /proc/<pid>/stat.
func statCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may hold spaces; the fields after
	// it are fixed: utime and stime are the 12th and 13th.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// children returns the ids of a process's children.
func children(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if k, err := strconv.Atoi(f); err == nil {
			out = append(out, k)
		}
	}
	return out
}

// openFDs counts a process's open file descriptors.
func openFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// keepAlive opens n connections to the server at baseURL, sends GET path
// on each and reads the answer, and keeps them open. close drops them.
func keepAlive(ctx context.Context, baseURL, path string, n int) (closeAll func(), err error) {
	host := strings.TrimPrefix(baseURL, "http://")
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\n\r\n"
	conns := make([]net.Conn, n)
	closeAll = func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, 64)
	d := net.Dialer{Timeout: 5 * time.Second}
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := d.DialContext(ctx, "tcp", host)
			if err == nil {
				conns[i] = c
				err = oneRequest(c, req)
			}
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		closeAll()
		return nil, fmt.Errorf("keep-alive connections: %w", firstErr)
	}
	return closeAll, nil
}

func oneRequest(c net.Conn, req string) error {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	if err == nil && resp.Close {
		err = fmt.Errorf("the server closed the connection")
	}
	return err
}

// memoryReading is a server's resident memory idle and with the
// connections open.
type memoryReading struct {
	idle, loaded int64
	conns        int
	fds          int // the server's open files with the connections open
}

// perConn is the extra memory per open connection.
func (m memoryReading) perConn() int64 {
	if m.conns == 0 {
		return 0
	}
	return (m.loaded - m.idle) / int64(m.conns)
}

// measureMemory reads the RSS of pid (and its children when tree) after one
// request, then with n keep-alive connections that each made one request.
func measureMemory(ctx context.Context, pid int, tree bool, baseURL, path string, n int) (memoryReading, error) {
	read := rss
	if tree {
		read = treeRSS
	}
	warm, err := keepAlive(ctx, baseURL, path, 1)
	if err != nil {
		return memoryReading{}, err
	}
	warm()
	time.Sleep(100 * time.Millisecond)
	m := memoryReading{conns: n}
	if m.idle, err = read(pid); err != nil {
		return m, err
	}
	closeAll, err := keepAlive(ctx, baseURL, path, n)
	if err != nil {
		return m, err
	}
	defer closeAll()
	// Let the server's goroutines or workers settle on idle connections.
	time.Sleep(300 * time.Millisecond)
	m.loaded, err = read(pid)
	m.fds = openFDs(pid)
	return m, err
}
