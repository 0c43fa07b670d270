package consumer

// Connected is implemented by sources that can tell whether they currently
// hold a working connection to their broker. Health checks report a consumer
// ready only while its source is connected; a source that does not implement
// Connected counts as connected.
//
// For adapter authors (see the package doc).
type Connected interface {
	// Connected reports whether the broker connection is up. It must not
	// block and is called concurrently with Receive and settlements.
	Connected() bool
}
