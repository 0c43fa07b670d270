package wallets

import "errors"

var errNonPositive = errors.New("wallets: top-up amount must be positive")
