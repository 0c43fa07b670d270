package requests

import "errors"

var errTooWide = errors.New("report has too many columns")
