package adapters

import (
	"context"
	"errors"
	"net/url"
)



func openSQS(context.Context, *url.URL, options) (Broker, error) {
	return nil, errors.New("the sqs adapter is not available yet")
}
