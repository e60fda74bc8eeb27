/* SPDX-License-Identifier: MIT */
/*
 * An approximate state machine on a kBF (kBF paper Sec. 7): the TCP state
 * of each flow, keyed by its address pair, kept in a bk_kbf instead of a
 * hash table. A packet's flags move its flow along SYN -> SYN-ACK ->
 * ESTABLISHED -> FIN; RST or the last FIN ends it (delete). The kBF may
 * answer "not decodable" for a crowded flow: the monitor then leaves it.
 * Build: part of the bloomkit build (examples/); run with no arguments.
 */
#include <stdio.h>
#include <string.h>

#include "bloomkit/kbf.h"

enum { SYN_SENT, SYN_ACKED, ESTABLISHED, CLOSING, N_STATES };
static const char *const state_names[N_STATES] = {"SYN_SENT", "SYN_ACKED",
                                                  "ESTABLISHED", "CLOSING"};

/* One packet of a flow: its (source, destination) and its flag. */
typedef struct packet {
  const char *flow;
  const char *flag; /* "SYN", "SYNACK", "ACK", "FIN", "RST" */
} packet;

static void on_packet(bk_kbf *states, const packet *p) {
  bk_hash h;
  bk_kbf_result found;
  uint32_t state = 0;
  if (bk_kbf_hash(states, p->flow, strlen(p->flow), &h) != BK_OK ||
      bk_kbf_query_index_hash(states, h, &found, &state) != BK_OK)
    return;
  if (found == BK_KBF_UNDECODABLE) {
    printf("%-24s %-6s state unknown (crowded cells): left alone\n", p->flow,
           p->flag);
    return;
  }
  bool known = found == BK_KBF_FOUND;
  bk_status st = BK_OK;
  if (!known && strcmp(p->flag, "SYN") == 0)
    st = bk_kbf_insert_index_hash(states, h, SYN_SENT); /* a new flow */
  else if (known && strcmp(p->flag, "RST") == 0)
    st = bk_kbf_delete_index_hash(states, h, state);
  else if (known && state == SYN_SENT && strcmp(p->flag, "SYNACK") == 0)
    st = bk_kbf_update_index_hash(states, h, SYN_ACKED);
  else if (known && state == SYN_ACKED && strcmp(p->flag, "ACK") == 0)
    st = bk_kbf_update_index_hash(states, h, ESTABLISHED);
  else if (known && state == ESTABLISHED && strcmp(p->flag, "FIN") == 0)
    st = bk_kbf_update_index_hash(states, h, CLOSING);
  else if (known && state == CLOSING && strcmp(p->flag, "FIN") == 0)
    st = bk_kbf_delete_index_hash(states, h, state); /* closed */
  printf("%-24s %-6s %-12s -> ", p->flow, p->flag,
         known ? state_names[state] : "(none)");
  if (bk_kbf_query_index_hash(states, h, &found, &state) == BK_OK &&
      found == BK_KBF_FOUND)
    printf("%s", state_names[state]);
  else
    printf("(none)");
  printf("%s\n", st == BK_OK ? "" : "  [kBF refused the change]");
}

int main(void) {
  /* Sized for 100,000 concurrent flows at a 0.1 % false positive rate. */
  bk_kbf_config cfg = {.capacity = 100000, .fpp = 0.001, .max_values = 7};
  bk_kbf *states = NULL;
  if (bk_kbf_create(&states, &cfg) != BK_OK) return 1;
  for (uint32_t s = 0, index; s < N_STATES; s++) /* value s gets index s */
    if (bk_kbf_intern(states, state_names[s], strlen(state_names[s]), &index) !=
            BK_OK ||
        index != s)
      return 1;
  const packet trace[] = {
      {"10.0.0.1>10.0.0.9", "SYN"},    {"10.0.0.2>10.0.0.9", "SYN"},
      {"10.0.0.1>10.0.0.9", "SYNACK"}, {"10.0.0.1>10.0.0.9", "ACK"},
      {"10.0.0.2>10.0.0.9", "RST"},    {"10.0.0.3>10.0.0.9", "ACK"},
      {"10.0.0.1>10.0.0.9", "FIN"},    {"10.0.0.1>10.0.0.9", "FIN"},
  };
  for (size_t i = 0; i < sizeof trace / sizeof trace[0]; i++)
    on_packet(states, &trace[i]);
  bk_kbf_info info;
  if (bk_kbf_info_get(states, &info) == BK_OK)
    printf("flows tracked at the end: %llu\n", (unsigned long long)info.n_keys);
  bk_kbf_destroy(states);
  return 0;
}
