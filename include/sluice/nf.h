/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The Sluice NF API.
 *
 * An NF is a const struct sl_nf_ops and a one-line main:
 *
 *     static const struct sl_nf_ops ops = {
 *             .name = "forward",
 *             .service = "forward",
 *             .access = SL_ACCESS_READ,
 *             .process_pkt = fwd_pkt,
 *     };
 *     int main(int argc, char **argv) { return sl_nf_main(&ops, argc, argv); }
 *
 * libsluice owns everything else: EAL init as a DPDK secondary process,
 * argument parsing, registration with sluiced, the receive loop, batching,
 * idle sleeping, signals, statistics and clean shutdown.
 *
 * Command line of every NF:
 *
 *     sluice-X [EAL args] -- [--node NAME] [-s|--service NAME]
 *                            [--instance N] [--mode shared|poll] [--core N]
 *                            [NF args]
 *
 * NF-specific arguments are handed to ops->init() with argv[0] set to the
 * program name; libsluice's own options are removed first. An NF that
 * declares its options (ops->opts, struct sl_nf_opt) has them parsed,
 * checked and stored in its private context by libsluice before init. An
 * NF without init or opts takes none: any other argument is refused before EAL init
 * ("PROG: unknown option 'ARG': this NF takes no options of its own ...",
 * exit status 1). --core N must be a CPU the process may run on. -h or --help
 * (with or without the --) prints libsluice's usage and ops->usage and
 * exits 0 without attaching to sluiced.
 */
#ifndef SLUICE_NF_H
#define SLUICE_NF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rte_hash;
struct rte_mbuf;
struct rte_mempool;
struct sl_nf;

/**
 * A verdict says where a packet goes after this NF. It is a 32-bit value:
 * the kind in bits 16..23, the service or port id in bits 0..15.
 */
typedef uint32_t sl_verdict_t;

#define SL_VERDICT_KIND_SHIFT 16
#define SL_VERDICT_NEXT 0u /**< follow the default edge of the graph */
#define SL_VERDICT_TO 1u   /**< go to a service (must be an allowed edge) */
#define SL_VERDICT_OUT 2u  /**< leave through a port */
#define SL_VERDICT_DROP 3u /**< drop (counted as an NF verdict drop) */

#define SL_NEXT ((sl_verdict_t)0)
#define SL_TO(service_id)                                                      \
	((sl_verdict_t)((SL_VERDICT_TO << SL_VERDICT_KIND_SHIFT) |             \
			((service_id)&0xffffu)))
#define SL_OUT(port_id)                                                        \
	((sl_verdict_t)((SL_VERDICT_OUT << SL_VERDICT_KIND_SHIFT) |            \
			((port_id)&0xffffu)))
#define SL_DROP ((sl_verdict_t)(SL_VERDICT_DROP << SL_VERDICT_KIND_SHIFT))

static inline unsigned
sl_verdict_kind(sl_verdict_t v)
{
	return (v >> SL_VERDICT_KIND_SHIFT) & 0xffu;
}

static inline uint16_t
sl_verdict_id(sl_verdict_t v)
{
	return (uint16_t)(v & 0xffffu);
}

/** Access declaration: what the NF does to packets (bit mask). */
#define SL_ACCESS_READ 0x1u  /**< reads packet bytes */
#define SL_ACCESS_WRITE 0x2u /**< modifies packet bytes */
#define SL_ACCESS_ROUTE 0x4u /**< changes flow routing (TO, OUT, requests) */

/**
 * Type of an NF option (struct sl_nf_opt): what its value is, how it is
 * checked and what is stored at its offset in the NF's private context.
 */
enum sl_nf_opt_type {
	/** No value; stores int 1 when given (default 0). */
	SL_OPT_FLAG = 1,
	/** A number from min to max, plain decimal digits (sl_parse_number):
	 * with frac a double, else a whole number stored as an unsigned
	 * integer of the member's size (1, 2, 4 or 8 bytes). */
	SL_OPT_NUMBER,
	/** Any text; stores const char * (into argv). */
	SL_OPT_STRING,
	/** A path, for the NF to open; stores const char *. */
	SL_OPT_FILE,
	/** A sluice port name; stores its ethdev id as int (-1 if not given). */
	SL_OPT_PORT,
	/** A service name, waited for up to 5 s (sl_service_id_wait: its NF
	 * may be starting beside this one); stores its id as int (-1 if not
	 * given). */
	SL_OPT_SERVICE,
	/** One of choices; stores its index as int. */
	SL_OPT_CHOICE,
};

/**
 * One option of an NF, one entry of sl_nf_ops.opts: libsluice takes it
 * from the command line, checks it, stores it in the private context
 * (sl_nf_ops.priv_size bytes, which libsluice allocates) and lists it in
 * --help, all before ops->init is called. Fill offset and size with
 * SL_OPT_AT(struct, member).
 */
struct sl_nf_opt {
	/** Long name without the dashes ("rules" is --rules); NULL ends the
	 * table. A unique prefix stands for it, as with getopt_long. */
	const char *name;
	/** Short option letter (-r), or 0 for none: an alias, not listed in
	 * --help (say so in help if it should be). */
	char letter;
	/** SL_OPT_*. */
	enum sl_nf_opt_type type;
	/** The value's name in --help ("FILE", "N"); not for SL_OPT_FLAG. */
	const char *arg;
	/** Help text; a '\n' in it goes on at the same column. */
	const char *help;
	/** Where the value goes in the private context, and the member's
	 * size (checked against the type: a mismatch is refused). */
	size_t offset;
	size_t size;
	/** SL_OPT_NUMBER: the range, and 1 if a fraction is allowed. */
	double min, max;
	int frac;
	/** SL_OPT_NUMBER's error says the value "is not a WHAT from MIN to
	 * MAX": WHAT is this, or "whole number" / "number" if NULL.
	 * SL_OPT_CHOICE's says it "is not WHAT" ("allow or deny") if set,
	 * else "--OPT 'S': use a, b or c". */
	const char *what;
	/** SL_OPT_CHOICE: the choices, NULL-terminated. */
	const char *const *choices;
	/** The default, written as on the command line ("128", "allow"),
	 * checked and stored as a given value would be before the command
	 * line is read; NULL: zero (-1 for a port or service). */
	const char *def;
	/** SL_ACCESS_* bits the NF needs when the option is given (an option
	 * that makes it rewrite packets: SL_ACCESS_WRITE); ORed into
	 * sl_nf_ops.access at registration. */
	uint32_t access;
	/**
	 * If set, called for each occurrence with the checked value instead
	 * of storing it (options given more than once, values of several
	 * parts): 0, or a positive errno after printing what was wrong.
	 * Runs after registration, so it may look up ports and services.
	 */
	int (*parse)(struct sl_nf *nf, void *priv, const char *value);
};

/** offset and size of struct sl_nf_opt for member of type. */
#define SL_OPT_AT(type, member)                                                \
	.offset = offsetof(type, member), .size = sizeof(((type *)0)->member)

struct sl_nf_ops {
	/** Program name, for logs (required). */
	const char *name;
	/** Default service name; --service overrides it (required). */
	const char *service;
	/** SL_ACCESS_* bits. */
	uint32_t access;
	/**
	 * Called once after registration, before the first packet, with the
	 * NF-specific arguments. Returns 0, or a positive errno after printing
	 * what was wrong (the NF then exits with status 1). May be NULL: the
	 * NF then accepts no arguments of its own but those of its opts.
	 */
	int (*init)(struct sl_nf *nf, int argc, char **argv);
	/**
	 * Burst handler: set a verdict for each of pkts[0..n) with
	 * sl_pkt_set_verdict(). Packets whose verdict is not set follow NEXT.
	 * Exactly one of process and process_pkt must be set.
	 */
	void (*process)(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n);
	/** Per-packet convenience form of process; returns the verdict. */
	sl_verdict_t (*process_pkt)(struct sl_nf *nf, struct rte_mbuf *pkt);
	/**
	 * Called from the NF loop about every tick_ms milliseconds (and when
	 * idle). May be NULL.
	 */
	void (*tick)(struct sl_nf *nf, uint64_t now_ns);
	/** Period of tick in milliseconds; 0 means 1000. */
	uint32_t tick_ms;
	/** Called on SIGHUP, from the NF loop (not the signal handler). */
	void (*reload)(struct sl_nf *nf);
	/**
	 * Called from the NF loop when a Message(service, key, value) sent to
	 * this NF's service arrives (sluice/flow.h): every live instance of
	 * the service gets it, the sender too if it is one of them. key (at
	 * most 63 bytes) and value (at most 255) are valid only during the
	 * call. May be NULL.
	 */
	void (*on_message)(struct sl_nf *nf, const char *key,
			   const char *value);
	/**
	 * Called with the outcome of a cross-layer request (sluice/flow.h):
	 * result 0 when applied (reason is then "", except for a Message
	 * that some instances of its service missed because their inbox was
	 * full: it says how many), else a positive errno and the reason,
	 * valid only during the call. May be NULL. Every rejection, and every
	 * Message some instances missed, is logged to stderr by libsluice
	 * either way.
	 */
	void (*on_reply)(struct sl_nf *nf, int64_t id, int result,
			 const char *reason);
	/**
	 * Called once on shutdown, after the last packet and after the NF
	 * has deregistered (a request made here gets no on_reply). Not called
	 * when init failed: init frees what it made before returning an
	 * error. init and all other callbacks run on the NF's one thread, one
	 * at a time. May be NULL.
	 */
	void (*fini)(struct sl_nf *nf);
	/**
	 * The NF's own options, one or more lines (e.g. "sluice-x options:
	 * --rules FILE ...\n  --rules FILE  the rule file\n"). On -h or --help
	 * libsluice prints its own usage and then this to stdout and exits 0,
	 * before EAL init, so help needs no running sluiced. With opts, this
	 * is only the synopsis: libsluice prints a line per option after it,
	 * and knows from the table which options take a value (the next
	 * argument, even one that reads -h). libsluice never reads this
	 * text: without opts, -h anywhere among the NF's arguments is the
	 * help. May be NULL.
	 */
	const char *usage;
	/**
	 * The NF's options as a table (struct sl_nf_opt), ended by an entry
	 * with a NULL name, or NULL. With a table, libsluice parses the NF's
	 * arguments itself: init (which may then be NULL) is called with
	 * every option stored in the private context, and gets the same
	 * argv as without a table. An argument the table does not have is
	 * refused ("PROG: unrecognized option 'ARG'", then usage, on stderr).
	 */
	const struct sl_nf_opt *opts;
	/**
	 * Bytes of private context libsluice allocates (zeroed) before the
	 * options are stored and init is called, and frees after fini (or a
	 * failed init); sl_nf_priv() returns it. 0: none (the NF may then
	 * sl_nf_set_priv() its own). Required with opts.
	 */
	size_t priv_size;
	/** Column at which --help starts the options' help texts (0: two
	 * past the longest "--name ARG"). */
	uint32_t opts_help_col;
};

/**
 * Runs an NF: parses argv, initialises EAL as a secondary process of the
 * sluiced named by --node, registers, calls ops->init, runs the loop until
 * SIGINT/SIGTERM or sluiced asks it to stop, calls ops->fini, deregisters.
 * With -h or --help among libsluice's and the NF's arguments it only
 * prints the usage (libsluice's, then ops->usage) to stdout.
 *
 * @return process exit status (0 on clean shutdown and after help).
 */
int sl_nf_main(const struct sl_nf_ops *ops, int argc, char **argv);

/** Sets the verdict of a packet inside a burst handler. */
void sl_pkt_set_verdict(struct rte_mbuf *m, sl_verdict_t v);
/** Returns the verdict currently set on a packet. */
sl_verdict_t sl_pkt_verdict(const struct rte_mbuf *m);
/** Ingress port (ethdev id) of a packet, or UINT16_MAX if NF-made. */
uint16_t sl_pkt_in_port(const struct rte_mbuf *m);
/** Symmetric flow hash computed once at ingress (0 if not IP). */
uint32_t sl_pkt_flow_hash(const struct rte_mbuf *m);

/** Service id by name, or -1 if no such service is known to sluiced
 * (one that a chain or graph names, or an NF registered, is known). */
int sl_service_id(const struct sl_nf *nf, const char *name);
/** The same, but a service not known yet is waited for up to timeout_ms
 * (saying so on stderr): for init, when the NFs of a deployment start
 * together and the one that registers the service may come up later.
 * -1 if it is still unknown then, or on a stop request. */
int sl_service_id_wait(const struct sl_nf *nf, const char *name,
		       unsigned int timeout_ms);
/** Port (ethdev) id by sluice port name, or -1 if unknown. */
int sl_port_id(const struct sl_nf *nf, const char *name);

/** This instance's id, service id, and private pointer for NF state. */
uint16_t sl_nf_instance(const struct sl_nf *nf);
uint16_t sl_nf_service(const struct sl_nf *nf);
void *sl_nf_priv(const struct sl_nf *nf);
void sl_nf_set_priv(struct sl_nf *nf, void *priv);

/** The packet pool for NFs that create packets (speedtest): the main
 * pool, on the NUMA socket of sluiced's main lcore. A packet goes back
 * to its own pool when freed, whichever pool it came from. */
struct rte_mempool *sl_nf_pktmbuf_pool(const struct sl_nf *nf);

/**
 * Sends packets that this NF created (or holds) as if it had processed
 * them: each follows its verdict from this NF's position in the graph.
 * Ownership passes to Sluice for every packet (sent or dropped-and-counted).
 */
void sl_nf_send(struct sl_nf *nf, struct rte_mbuf **pkts, uint16_t n);

/**
 * 1 when the default chain has an edge out of this NF's service and every
 * service on the chain has a live instance: packets this NF sends with
 * SL_NEXT will get through. For NFs that generate traffic.
 */
int sl_nf_chain_ready(const struct sl_nf *nf);

/** Asks the NF loop to stop after the current burst. */
void sl_nf_stop(struct sl_nf *nf);

/** Current time in ns from the TSC (cheap; for NFs' own windows). */
uint64_t sl_now_ns(void);

/* ---- helpers for NF code (src/nflib/sl_helpers.c) ------------------- */

/**
 * Longest sl_nf_table_spec.tag: rte_hash names a ring "HT_EXT_" + the
 * table's name, TAG<pid>_<instance>, and DPDK keeps 28 characters of a
 * ring's name: 7 + tag + 7 (pid_max 4194304) + 1 + 4 (instance < 4096).
 */
#define SL_NF_TABLE_TAG_MAX 9

/** What sl_nf_table_create() makes. */
struct sl_nf_table_spec {
	const char *prog;       /**< for messages: "sluice-flowclass" */
	const char *tag;        /**< name prefix: "slfc" -> slfc<pid>_<inst>;
				     1 to SL_NF_TABLE_TAG_MAX characters
				     (a longer one is refused: EINVAL) */
	const char *what;       /**< "a flow table of N flows": "flow" */
	const char *whats;      /**< ... and "flows" */
	uint32_t entries;       /**< capacity (at least 16 are made) */
	uint32_t key_len;       /**< key bytes */
	uint32_t bytes_per_key; /**< hugepage bytes an entry takes, only for
				     the out-of-memory message (about 74
				     for a struct sl_5tuple key) */
	size_t slot_size;       /**< bytes of NF state per table position */
};

/**
 * Creates an rte_hash private to this NF instance (CRC hash, extendable
 * buckets, any socket), named after the pid and instance; one of that name
 * left by a dead process with our pid is freed first. With slot_size > 0,
 * also a zeroed array of *n_slots = rte_hash_max_key_id() + 1 entries of
 * slot_size bytes in *slots, indexed by the positions rte_hash returns
 * (free() it); with slot_size 0, *slots and *n_slots are left alone, and
 * n_slots may be NULL. The table takes no lock: use it from the NF's
 * callbacks only, and rte_hash_free() it in fini (include rte_hash.h).
 * Call it from init. When DPDK cannot make the table, prints
 * "PROG: cannot create a WHAT table of N WHATS (about M MB of the hugepage
 * memory sluiced sets aside with --nf-mem): REASON"; when the array cannot
 * be had, "PROG: out of memory".
 *
 * @return 0, or a positive errno after printing what was wrong (nothing
 * is then left allocated and *h is NULL).
 */
int sl_nf_table_create(struct sl_nf *nf, const struct sl_nf_table_spec *spec,
		       struct rte_hash **h, void **slots, uint32_t *n_slots);

/**
 * Parses s, the whole string, as a number from min to max (min >= 0):
 * plain decimal digits with at most one '.' (no blanks, sign, hex,
 * exponent or "inf"); with frac 0 a whole number, digits only. 0 with
 * *out set, or -EINVAL.
 */
int sl_parse_number(const char *s, double min, double max, int frac,
		    double *out);

/**
 * sl_parse_number() for the value s of option opt. On an error prints
 * "PROG: OPT: 'S' is not a [whole ]number from MIN to MAX" and returns
 * EINVAL (for init to return); else 0.
 */
int sl_opt_number(const char *prog, const char *opt, const char *s, double min,
		  double max, int frac, double *out);

/**
 * Reads the whole file at path, at most max bytes, for an NF's
 * configuration: *text (malloc'd, the caller frees it; NUL-terminated
 * after its *len bytes). On an error *text is NULL and err holds one of
 * "PATH: cannot open: STRERROR", "PATH: out of memory", "PATH: read
 * error", "PATH: larger than MAX bytes".
 *
 * @return 0, or a positive errno (that of fopen(), ENOMEM, EIO, EFBIG).
 */
int sl_read_file(const char *path, size_t max, char **text, size_t *len,
		 char *err, size_t err_size);

/**
 * An NF's counters line, printed every --stats-ms, on a "stats" message
 * and at exit: when it is due, and its common head.
 */
struct sl_stats_line {
	uint64_t start_ns;  /**< sl_stats_line_start() */
	uint64_t every_ns;  /**< 0: no periodic line */
	uint64_t next_ns;   /**< the next periodic line */
	uint64_t last_ns;   /**< the previous line */
	uint64_t last_pkts; /**< packets at the previous line */
};

/** Room for what sl_stats_line_head() writes. */
#define SL_STATS_HEAD_LEN 224

/** Starts at now, with a periodic line every every_ns (0: none). */
void sl_stats_line_start(struct sl_stats_line *l, uint64_t every_ns,
			 uint64_t now);
/** 1 when the periodic line is due at now (the next is due every_ns
 * later), else 0. */
int sl_stats_line_due(struct sl_stats_line *l, uint64_t now);
/**
 * Writes "TAG-stats: reason=REASON uptime=S packets=N bytes=N pps=R"
 * (uptime in seconds since start, %.1f; packets per second since the
 * previous line, %.0f) into buf for the NF to print with its own
 * counters, and makes now the previous line.
 */
void sl_stats_line_head(struct sl_stats_line *l, char *buf, size_t size,
			const char *tag, const char *reason, uint64_t now,
			uint64_t pkts, uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_NF_H */
