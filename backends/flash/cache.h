/* The flash SSD model's DRAM data cache (cache.c; MQSim's Data_Cache_Manager_Flash_Advanced): what
 * the core (flash.c) calls. The cache sits between the core and the FTL (ftl.h), whose transactions
 * it makes for misses and write-backs; it calls nothing of the core: what ends a request it returns
 * (cache_dram_done). Its state is in struct fl_sim (model.h), unused with cache_mode 0. */
#ifndef HSS_FLASH_CACHE_H
#define HSS_FLASH_CACHE_H

#include "ftl.h"

/* Set up (cache_mode != 0) and release the cache's state; cache_init returns -1 out of memory. */
FL_INTERNAL int cache_init(fl_sim *s);
FL_INTERNAL void cache_free(fl_sim *s);
/* Admit request r, of pages first..last, with the cache on. */
FL_INTERNAL void cache_admit(fl_sim *s, int32_t r, uint64_t first, uint64_t last, int prio);
/* A user read transaction t has its data from flash (read caching: keep it). */
FL_INTERNAL void cache_fill(fl_sim *s, int32_t t);
/* A write-back transaction t (TX_CWRITE) has reached flash; t is released. */
FL_INTERNAL void cache_write_done(fl_sim *s, int32_t t);
/* The DRAM transfer d is done (EV_DRAM): returns the request whose last transfer it was (the caller
 * finishes it), else -1. Then cache_dram_next starts the DRAM channel's next transfer. */
FL_INTERNAL int32_t cache_dram_done(fl_sim *s, int32_t d);
FL_INTERNAL void cache_dram_next(fl_sim *s);
/* Consistency of the cache's slots, hash table and partitions; 0 or -1 + message. */
FL_INTERNAL int cache_check(const fl_sim *s, char *err, size_t errlen);

#endif
