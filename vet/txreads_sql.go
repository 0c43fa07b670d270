package vet

import (
	"regexp"
	"strings"
)

// selectReadFuncs are the SQL functions (and the keywords written like
// one, IN(…), EXISTS(…)) that a SELECT calls without changing anything:
// aggregates, scalar and set-returning built-ins, and the catalog's
// size and setting readers.
var selectReadFuncs = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`
		in exists any all some values over filter not and or on using as from where select lateral join cast row array
		count sum avg min max coalesce nullif greatest least now lower upper length char_length octet_length abs
		round floor ceil ceiling trunc mod power sqrt trim btrim ltrim rtrim substring substr position strpos replace
		concat concat_ws format split_part left right lpad rpad to_char to_timestamp to_date to_number date_trunc
		date_part extract make_interval age timezone array_agg array_length array_position cardinality unnest
		generate_series string_agg json_agg jsonb_agg json_build_object jsonb_build_object json_object_agg
		jsonb_object_agg jsonb_array_length jsonb_extract_path_text jsonb_typeof to_json to_jsonb row_to_json
		row_number rank dense_rank lag lead first_value last_value ntile percentile_cont bool_and bool_or every
		encode decode md5 sha256 hashtext hashtextextended convert_to convert_from gen_random_uuid random
		pg_backend_pid pg_is_in_recovery current_setting to_regclass pg_table_size pg_total_relation_size
		pg_indexes_size pg_relation_size inet_server_port version current_database current_schema
	`) {
		selectReadFuncs[f] = true
	}
}

var (
	sqlQuoted  = regexp.MustCompile(`'(?:[^']|'')*'|"(?:[^"]|"")*"`)
	sqlCall    = regexp.MustCompile(`([A-Za-z_][A-Za-z_0-9$]*(?:\.[A-Za-z_][A-Za-z_0-9$]*)?)\(`)
	sqlLocking = regexp.MustCompile(`(?i)\bfor\s+(?:no\s+key\s+update|update|key\s+share|share)\b`)
	sqlInto    = regexp.MustCompile(`(?i)\binto\b`)
)

// selectWrites reports whether the text of sql, a SELECT, shows that
// running it through the pool is not a plain read:
//
//   - it calls a function not known to only read (see selectReadFuncs;
//     PostGIS's spatial functions, named st_…, only compute):
//     a function of the schema (SELECT award_points($1, $2)), which may
//     write, or a built-in with a side effect (nextval, setval,
//     pg_notify, pg_advisory_lock, whose session lock then stays on a
//     pooled connection);
//   - it locks rows (FOR UPDATE, FOR SHARE, …): through the pool the lock
//     is taken outside the claim's transaction, protects nothing, and
//     waits on the rows the transaction has changed;
//   - it is a SELECT … INTO, which creates a table.
//
// What it does not catch: a function called with whitespace before its
// parenthesis (award_points ($1)) or by a quoted name ("award"($1)); a
// view or a rule that writes; a function named like a known reader in
// another schema (myschema.count(…) is taken by its last name).
func selectWrites(sql string) bool {
	sql = sqlQuoted.ReplaceAllString(sql, "''")
	if sqlLocking.MatchString(sql) || sqlInto.MatchString(sql) {
		return true
	}
	for _, m := range sqlCall.FindAllStringSubmatch(sql, -1) {
		name := strings.ToLower(m[1])
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		if !selectReadFuncs[name] && !strings.HasPrefix(name, "st_") {
			return true
		}
	}
	return false
}
