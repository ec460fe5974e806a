package mcp

import (
	"context"
	"log/slog"
)

// sdkLogger is the logger the MCP SDK is given: l, with the SDK's records
// below warning level written at debug. The endpoint is stateless, so the
// SDK connects, opens and closes a session for every POST and says so at
// info; at info level a tool call is then one line of the log, the access
// log's (api's accessLog), not four.
func sdkLogger(l *slog.Logger) *slog.Logger { return slog.New(quietHandler{l.Handler()}) }

// quietHandler writes a record below warning level at debug.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.Handler.Enabled(ctx, quieter(level))
}

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = quieter(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

// quieter is level, or debug for a level below warning.
func quieter(level slog.Level) slog.Level {
	if level < slog.LevelWarn {
		return slog.LevelDebug
	}
	return level
}
