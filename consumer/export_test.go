package consumer

// UsePlainScheduler makes c run on the plain reference scheduler; call it
// before Run.
func UsePlainScheduler(c *Consumer) { c.usePlain() }
