package vet

import (
	"go/ast"
	"go/types"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Import paths of the clients whose calls are effects outside the database.
const (
	pathRedis   = "github.com/redis/go-redis/v9"
	pathNATS    = "github.com/nats-io/nats.go"
	pathNATSJ   = "github.com/nats-io/nats.go/jetstream"
	pathSQS     = "github.com/aws/aws-sdk-go-v2/service/sqs"
	pathSNS     = "github.com/aws/aws-sdk-go-v2/service/sns"
	pathGRPC    = "google.golang.org/grpc"
	pathSaram   = "github.com/IBM/sarama"
	pathPubSub  = "cloud.google.com/go/pubsub"
	pathKafkaGo = "github.com/segmentio/kafka-go"
	pathSMTP    = "net/smtp"
)

// redisWrites are the go-redis commands that change data or publish: the
// commands a handler uses for effects. Reads (Get, HGet, Exists, …) are
// not effects and are not reported.
var redisWrites = map[string]bool{
	"Set": true, "SetNX": true, "SetEx": true, "SetArgs": true, "MSet": true, "GetSet": true, "GetDel": true,
	"Del": true, "Unlink": true, "Expire": true, "Incr": true, "IncrBy": true, "Decr": true, "DecrBy": true,
	"HSet": true, "HDel": true, "HIncrBy": true, "LPush": true, "RPush": true, "LPop": true, "RPop": true,
	"SAdd": true, "SRem": true, "ZAdd": true, "ZRem": true, "ZIncrBy": true,
	"XAdd": true, "XAck": true, "XDel": true, "Publish": true, "SPublish": true,
}

// natsPublishes are the nats.go calls that publish a message, on *nats.Conn
// and on a JetStreamContext.
var natsPublishes = map[string]bool{
	"Publish": true, "PublishMsg": true, "PublishRequest": true, "Request": true, "RequestMsg": true,
	"PublishAsync": true, "PublishMsgAsync": true,
}

// outsideEffect returns a description of call when it is an effect on a
// system other than the database, which the claim's transaction cannot roll
// back, or "":
//
//   - a request through net/http that may change something (http.Post,
//     PostForm, (*http.Client).Do, Post, PostForm); Get and Head, safe
//     methods by HTTP's definition, are reads and are not reported, nor
//     is Do given a request the function built with a constant GET, HEAD
//     or OPTIONS (see safeRequest);
//   - a produce through franz-go ((*kgo.Client).Produce, ProduceSync,
//     TryProduce);
//   - a publish through amqp091 ((*Channel).Publish, PublishWithContext,
//     PublishWithDeferredConfirm, PublishWithDeferredConfirmWithContext);
//   - a go-redis command that writes or publishes (see redisWrites), on
//     *redis.Client, *redis.ClusterClient or the redis.Cmdable interface,
//     except a lock (see redisLocks);
//   - a sarama SyncProducer's SendMessage or SendMessages, a kafka-go
//     (*Writer).WriteMessages;
//   - an e-mail through net/smtp (SendMail, (*Client).Data);
//   - a Google Pub/Sub publish ((*pubsub.Topic).Publish, v2's
//     (*pubsub.Publisher).Publish);
//   - a nats.go publish or request (see natsPublishes) on *nats.Conn or a
//     nats.JetStreamContext, and on the jetstream package's JetStream;
//   - an AWS SDK v2 SQS SendMessage or SendMessageBatch, an SNS Publish or
//     PublishBatch;
//   - a gRPC call: (*grpc.ClientConn).Invoke, NewStream, and every method of
//     generated client code (a method whose last parameter is
//     ...grpc.CallOption);
//   - a write to the file system (os.WriteFile, Create, Rename, Remove, …;
//     not a temporary file nor a deferred cleanup: see fileEffect).
//
// What it does not catch: other clients (other cloud SDKs, clients
// of other HTTP libraries), and effects behind a function of another
// package. A gRPC method that only reads is reported too: mark it
// //oncely:allow txescape REASON.
func outsideEffect(pass *analysis.Pass, call *ast.CallExpr, exempt map[*ast.CallExpr]bool) string {
	return effectOf(pass, callee(pass.TypesInfo, call), call, exempt)
}

// effectOf is outsideEffect for a call that runs fn: its callee, or the
// function a field or variable called holds (see funcFields).
func effectOf(pass *analysis.Pass, fn *types.Func, call *ast.CallExpr, exempt map[*ast.CallExpr]bool) string {
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	sig := fn.Type().(*types.Signature)
	recv := sig.Recv()
	if recv != nil && grpcCallOptions(sig) {
		return "the gRPC call " + fn.Name()
	}
	recvIs := func(pkg, name string) bool { return recv != nil && isNamed(recv.Type(), pkg, name) }
	switch fn.Pkg().Path() {
	case pathHTTP:
		switch fn.Name() {
		case "Post", "PostForm":
			if recv == nil {
				return "http." + fn.Name()
			}
			fallthrough
		case "Do":
			if recvIs(pathHTTP, "Client") && !(len(call.Args) == 1 && safeRequest(pass, call.Args[0])) {
				return "(*http.Client)." + fn.Name()
			}
		}
	case pathKgo:
		switch fn.Name() {
		case "Produce", "ProduceSync", "TryProduce":
			if recvIs(pathKgo, "Client") {
				return "(*kgo.Client)." + fn.Name()
			}
		}
	case pathAMQP:
		switch fn.Name() {
		case "Publish", "PublishWithContext", "PublishWithDeferredConfirm", "PublishWithDeferredConfirmWithContext":
			if recvIs(pathAMQP, "Channel") {
				return "(*amqp091.Channel)." + fn.Name()
			}
		}
	case pathRedis:
		if redisWrites[fn.Name()] && recv != nil && !exempt[call] {
			return "the Redis command " + fn.Name()
		}
	case pathNATS:
		if natsPublishes[fn.Name()] && (recvIs(pathNATS, "Conn") || recvIs(pathNATS, "JetStreamContext") || recvIs(pathNATS, "JetStream")) {
			return "the NATS " + fn.Name()
		}
	case pathNATSJ:
		if natsPublishes[fn.Name()] && recv != nil {
			return "the JetStream " + fn.Name()
		}
	case pathSQS:
		if (fn.Name() == "SendMessage" || fn.Name() == "SendMessageBatch") && recvIs(pathSQS, "Client") {
			return "the SQS " + fn.Name()
		}
	case pathSNS:
		if (fn.Name() == "Publish" || fn.Name() == "PublishBatch") && recvIs(pathSNS, "Client") {
			return "the SNS " + fn.Name()
		}
	case pathSaram, "github.com/Shopify/sarama":
		if (fn.Name() == "SendMessage" || fn.Name() == "SendMessages") && recv != nil {
			return "the sarama " + fn.Name()
		}
	case pathPubSub, pathPubSub + "/v2":
		if fn.Name() == "Publish" && (recvIs(pathPubSub, "Topic") || recvIs(pathPubSub+"/v2", "Publisher")) {
			return "the Pub/Sub Publish"
		}
	case pathKafkaGo:
		if fn.Name() == "WriteMessages" && recvIs(pathKafkaGo, "Writer") {
			return "(*kafka.Writer).WriteMessages"
		}
	case pathSMTP:
		if fn.Name() == "SendMail" || fn.Name() == "Data" && recvIs(pathSMTP, "Client") {
			return "smtp." + fn.Name()
		}
	case pathGRPC:
		if (fn.Name() == "Invoke" || fn.Name() == "NewStream") && recv != nil {
			return "the gRPC call " + fn.Name()
		}
	case "os", "io/ioutil":
		if !exempt[call] {
			return fileEffect(pass, fn, call)
		}
	}
	return ""
}

// grpcCallOptions reports whether sig's last parameter is
// ...grpc.CallOption: a method of generated gRPC client code.
func grpcCallOptions(sig *types.Signature) bool {
	if !sig.Variadic() {
		return false
	}
	last := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
	return isNamed(last.Elem(), pathGRPC, "CallOption")
}

// redisLocks returns the go-redis calls of the package that take and
// release a lock: in a function that releases a key with a deferred Del
// (defer rdb.Del(ctx, key), or a deferred function literal calling Del) or
// returns a function literal calling Del, directly or through a variable
// assigned it (a lock helper handing its release to the caller), that Del
// and the SetNX calls. A lock taken and released
// around the handler's work changes nothing a redelivery could repeat; a
// SetNX without a release (a "seen" key used as a dedupe) stays reported.
// The SetNX may be in a function of another package (a cache's Lock
// method, known by its hasEffect fact) when the function calling it
// releases the key itself. It does not match keys: a function that takes
// one key and releases another is taken as a lock.
func redisLocks(pass *analysis.Pass) map[*ast.CallExpr]bool {
	locks := map[*ast.CallExpr]bool{}
	isRedis := func(call *ast.CallExpr, name string) bool {
		fn := callee(pass.TypesInfo, call)
		return fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == pathRedis && fn.Name() == name
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			body := funcBody(n)
			if body == nil {
				return true
			}
			var release, litRelease, take []*ast.CallExpr
			var returned []types.Object         // variables the function returns
			lits := map[types.Object]ast.Expr{} // what they were assigned
			// dels collects the Del calls of a function literal that is
			// deferred or returned: the release it defers or hands over,
			// counted only next to a SetNX (a literal calling Del alone is a
			// cleanup, not a lock's release).
			dels := func(e ast.Expr) {
				lit, ok := ast.Unparen(e).(*ast.FuncLit)
				if !ok {
					return
				}
				ast.Inspect(lit.Body, func(k ast.Node) bool {
					if c, ok := k.(*ast.CallExpr); ok && isRedis(c, "Del") {
						litRelease = append(litRelease, c)
					}
					return true
				})
			}
			ast.Inspect(body, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.FuncLit:
					return false // its own function
				case *ast.DeferStmt:
					if isRedis(m.Call, "Del") {
						release = append(release, m.Call)
					}
					dels(m.Call.Fun)
				case *ast.AssignStmt:
					// unlock := func() { rdb.Del(…) }: returned later.
					for i, l := range m.Lhs {
						id, ok := l.(*ast.Ident)
						if ok && i < len(m.Rhs) && len(m.Lhs) == len(m.Rhs) {
							if obj := pass.TypesInfo.ObjectOf(id); obj != nil {
								lits[obj] = m.Rhs[i]
							}
						}
					}
				case *ast.ReturnStmt:
					for _, r := range m.Results {
						if id, ok := ast.Unparen(r).(*ast.Ident); ok {
							returned = append(returned, pass.TypesInfo.ObjectOf(id))
						}
						dels(r)
					}
				case *ast.CallExpr:
					if isRedis(m, "SetNX") || takesLock(pass, m) {
						take = append(take, m)
					}
				}
				return true
			})
			for _, obj := range returned {
				if e, ok := lits[obj]; ok && obj != nil {
					dels(e)
				}
			}
			if len(take) > 0 {
				release = append(release, litRelease...)
			}
			if len(release) > 0 {
				for _, c := range append(release, take...) {
					locks[c] = true
				}
			}
			return true
		})
	}
	return locks
}

// takesLock reports whether call is to a function of another package whose
// only effect is the Redis command SetNX (its hasEffect fact): a lock's
// take when the caller releases the key (see redisLocks).
func takesLock(pass *analysis.Pass, call *ast.CallExpr) bool {
	fn := callee(pass.TypesInfo, call)
	if fn == nil {
		return false
	}
	f := importedEffect(pass, fn)
	return f != nil && (f.Via == "the Redis command SetNX" || strings.HasSuffix(f.Via, "→ the Redis command SetNX"))
}
