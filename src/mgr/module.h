/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A sluiced module, as a table of functions in the style of Open vSwitch's
 * provider structs. main.c lists the modules in start order (m->modules);
 * each phase walks that list, so the list alone says in which order
 * modules start, stop and close:
 *
 *   init     list order          main thread, after EAL and shared memory
 *   start    list order          main thread, once every init succeeded
 *   poll     list order          control thread, every control-loop turn
 *   stop     REVERSE list order  main thread, after the control loop
 *   close    list order          main thread, after every stop
 *   release  list order          main thread, last; also after a failed
 *                                start, for every module whose init ran
 *
 * Every member but name may be NULL (nothing to do in that phase). A
 * module's RPC methods are its `methods` table; rpc.c looks methods up
 * in the modules' tables in list order, and `status` lists them so.
 */
#ifndef SL_MGR_MODULE_H
#define SL_MGR_MODULE_H

#include <stddef.h>

struct sl_mgr;
struct sl_rpc_method;

struct mgr_module {
	/* Short name ("registry"), for messages. */
	const char *name;
	/* Makes the module's state (m->o and m->shm are set, the modules
	 * before it in the list are initialised). 0, or a positive errno
	 * with the reason in err (err "" when the module has said it on
	 * stderr itself); the next modules are then not initialised and
	 * sluiced exits 1. */
	int (*init)(struct sl_mgr *m, char *err, size_t errlen);
	/* Starts the module's own threads (I/O lcores, telemetry, the rule
	 * builder), once every module is initialised, just before the
	 * control loop. A failure is the module's to log: sluiced runs on
	 * without what could not start. */
	void (*start)(struct sl_mgr *m);
	/* Control thread, once per control-loop turn (at most about 5 ms
	 * apart, and after any socket or pidfd event): the module's
	 * periodic work. It must not block, and never runs another
	 * module's poll. */
	void (*poll)(struct sl_mgr *m);
	/* Teardown, first phase, walked in reverse list order: stops what
	 * runs beside the control thread (threads, NFs, replicas). After
	 * every stop no NF or other thread reads sluiced's state. */
	void (*stop)(struct sl_mgr *m);
	/* Teardown, second phase: frees the module's state (what is left
	 * to finish first, such as quiescent-state actions, is finished). */
	void (*close)(struct sl_mgr *m);
	/* Teardown, last: gives back what would outlive sluiced otherwise
	 * (the ports' devices and folders); also after a failed start, if
	 * this module's init was called (even if it failed). */
	void (*release)(struct sl_mgr *m);
	/* The JSON-RPC methods it serves, ended by {NULL}; NULL: none. */
	const struct sl_rpc_method *methods;
};

/* The modules, each beside its code. */
extern const struct mgr_module mgr_node_module;      /* ctl/node.c */
extern const struct mgr_module mgr_io_module;        /* io.c */
extern const struct mgr_module mgr_registry_module;  /* registry_rpc.c */
extern const struct mgr_module mgr_scale_module;     /* scale.c */
extern const struct mgr_module mgr_rules_module;     /* rules/rpc.c */
extern const struct mgr_module mgr_requests_module;  /* requests/rpc.c */
extern const struct mgr_module mgr_flow_module;      /* flow/rpc.c */
extern const struct mgr_module mgr_ports_module;     /* ports/module.c */
extern const struct mgr_module mgr_graph_module;     /* graph_rpc.c */
extern const struct mgr_module mgr_control_module;   /* control.c */
extern const struct mgr_module mgr_stats_module;     /* stats/rpc.c */
extern const struct mgr_module mgr_telemetry_module; /* telemetry.c */

#endif /* SL_MGR_MODULE_H */
