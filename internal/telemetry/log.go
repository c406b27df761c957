package telemetry

import (
	"fmt"
	"io"
	"log/slog"
)

// Log formats accepted by NewLogger (--log-format, gateway.log_format).
const (
	FormatText = "text"
	FormatJSON = "json"
)

// NewLogger returns a logger writing to w at level in format: FormatText (logfmt-like
// key=value, the default when format is "") or FormatJSON (one JSON object per line, for log
// shippers such as Loki, Fluent Bit or Cloud Logging).
func NewLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	o := &slog.HandlerOptions{Level: level}
	switch format {
	case "", FormatText:
		return slog.New(slog.NewTextHandler(w, o)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("log format %q: want %s or %s", format, FormatText, FormatJSON)
}
