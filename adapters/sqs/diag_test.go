package sqs

import (
	"log/slog"
	"os"
)

func init() { diagLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})) }
