package consumers

import "errors"

var errOverLimit = errors.New("posting over the account's limit")
