//go:build oncely_plainsched

package consumer

func init() { plainByDefault = true }
