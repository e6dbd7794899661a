/*
 * round_protocol.pml: a Promela model (Debian's `spin`) of Syncopate's store round protocol:
 * 2 trainers, 1 store shard, 1 coordinator, R clocks, with at most one shard crash/restart.
 * Run by tests/model/check_model.sh, which checks each variant below.
 *
 * WHAT IT MODELS (and the code it stands for)
 *  - Shard (services/store/parameter_table.cc), each call one atomic step as under mu_:
 *      store_apply     = ParameterTable::Apply: UNAVAILABLE before the first SetMembers
 *                        (CheckReconciled); a sequence <= last_sequence_ is a duplicate, acknowledged
 *                        and not taken; ROUND pushes wait in pending_ (late push at or below
 *                        last_cut_, or out of clock order: FAILED_PRECONDITION); IMMEDIATE (SSP)
 *                        pushes are added to the live model at once.
 *      store_close     = ParameterTable::CloseRound: close_results_ makes a repeated close OK, and
 *                        so does a round at or below last_closed_round_ (closed before a restore,
 *                        or skipped); otherwise only round last_closed_round_+1 closes; it takes
 *                        the pending pushes its cuts name, moves last_cut_, and publishes.
 *      store_setmembers= ParameterTable::SetMembers(members, round): reconciles the shard and lets
 *                        a shard behind `round` skip to it (its live model becomes that round).
 *      Checkpointer    = Checkpointer::SaveIfChanged / ParameterTable::Durable: an atomic copy of
 *                        the live model, last closed round, last cuts and sequences, taken at any
 *                        moment that state changed since the last one (the real one only when its
 *                        durable version changed and once per interval: a superset; copying
 *                        unchanged state again is a no-op, and would hide deadlocks behind an
 *                        ever-enabled loop).
 *                        close_results_ is NOT in it. Pending round pushes are not in the
 *                        model's checkpoint, though the code's holds them (one atomic cut holds
 *                        each push either pending or in the model, never both): restored
 *                        pending pushes are not modelled.
 *      Crasher         = a kill at any moment + restart + Checkpointer::RestoreIfPresent /
 *                        ParameterTable::Restore: volatile state reset to the last checkpoint,
 *                        pending pushes and close_results_ gone, unreconciled until SetMembers.
 *                        Any call whose reply was not yet delivered fails (UNAVAILABLE).
 *      store_pull      = StoreServiceImpl::Pull of round g (BSP): UNAVAILABLE before the first
 *                        SetMembers; served when g <= last_closed_round_; otherwise
 *                        FAILED_PRECONDITION, or under PIPELINE parked (store/round_waiters.h)
 *                        until the shard closes a round >= g (served), a crash (UNAVAILABLE) or
 *                        the park deadline (UNAVAILABLE, retried); a round more than PULL_AHEAD
 *                        past last_closed_round_ is still FAILED_PRECONDITION at once.
 *  - Coordinator (services/coordinator/coordinator.cc + sync/bounded_staleness_policy.cc):
 *      Report -> BoundedStalenessPolicy::OnClock/Evaluate (BSP: close round r once every trainer
 *      reported clock r, cuts = RoundCuts::Take; grant a waiter at clock c while c - min <= s),
 *      EnqueueDecisions -> an action queue; RunPending: a dirty membership is sent first
 *      (SetMembership(members, last_round_)), then the front action's close unless
 *      round <= last_round_, then its grants; any failed store call -> StoreCallFailed (membership
 *      dirty, retry after backoff). ProbeStores notices a restarted shard (new incarnation).
 *      PIPELINE (pipelined grants): after a dirty membership, the front action's grants go out
 *      first, once (a retry after a failed close does not resend them), then its close as above;
 *      the action is popped when its close succeeds.
 *  - Trainer (services/client/session.cc StepSequential, protocol.cc, store_client.cc): wait for
 *      the grant of clock c, pull (BSP: round c), push clock c+1 with sequence c+1, retrying on
 *      UNAVAILABLE with the same sequence (StoreClient::ForEachShard), then report clock c+1.
 *      Pulls retry UNAVAILABLE too (PIPELINE: a park that timed out or a reply lost is retried).
 *
 * WHAT IT ABSTRACTS AWAY
 *  - Floats, tensors, chunks, aggregation, weights: the model is a counter per (trainer, clock)
 *    push, model[] = how many times that push was added into the live model.
 *  - One shard only (no cross-shard skew); sequence numbers equal clocks (one push per clock).
 *  - Join/Initialize/Leave/evictions/incarnations and the coordinator's own restart: the job starts
 *    initialized at round 0, with a checkpoint of that state, and trainers join before it starts;
 *    trainers await the grant of their last clock and stop (no Leave at the end).
 *  - Time: backoff, retry deadlines (2 min), RPC timeouts and the probe period are abstracted to
 *    "eventually"; a retry that would only get the same answer is modelled as waiting until the
 *    shard's state can have changed (trainer retries wait for `reconciled`; a coordinator whose
 *    close got FAILED_PRECONDITION waits for a new shard incarnation: nothing else can change the
 *    answer; a parked pull, and its retries after each park deadline, wait for a close of its
 *    round or a crash), so a retry loop that can never succeed shows as a deadlock.
 *  - Network: per-trainer FIFO, no reordering or duplication of requests; at most MAXLOSS replies
 *    are lost without a crash (the caller sees UNAVAILABLE although the call took effect).
 *  - The coordinator's Report handler and action thread are one process (reports are queued in a
 *    channel, so trainers never wait on the action thread).
 *  - RESOURCE_EXHAUSTED backpressure (kMaxPendingPushes) and snapshot eviction never arise here.
 *
 * VARIANTS (compile-time switches, -D to spin -a)
 *  SSP      immediate pushes + SSP grants with bound S (default 1); default is BSP (round pushes,
 *           S = 0, rounds closed by the coordinator).
 *  CRASH    at most one shard crash/restart, at any moment, from the last checkpoint.
 *  NO_CLOSE_PAST  the code before its fix (a close at or below last_closed_round_ with no record
 *           in close_results_ is FAILED_PRECONDITION): a sanity check that the model finds the
 *           stall below (expected to FAIL).
 *  STRICT_EXACTLY_ONCE  demand exactly once even with a crash (expected to FAIL: the loss window).
 *  MAXLOSS  replies lost without a crash (default 1).
 *  PIPELINE pipelined grants (BSP): grants before their round's close, pulls of a round not yet
 *           closed parked. PULL_AHEAD (default 1; the code's max_rounds_ahead is 16) bounds how
 *           far past the last closed round a pull may be: 1 is the tightest a pipelined grant
 *           needs, so a pass covers any larger window. SSP closes no rounds: PIPELINE changes
 *           nothing there.
 *  CLOSED_BEFORE_GRANT  with PIPELINE: still demand round g acknowledged to the coordinator
 *           (last_round_ >= g) when a trainer starts clock g+1 (expected to FAIL: a sanity check
 *           that grants really go out before their close).
 *
 * CHECKED PROPERTIES
 *  (a) no invalid end state: every process terminates (Checkpointer waits at an end label).
 *  (b) staleness: a trainer starts computing clock g+1 (grant g) only while g - min reported
 *      clock <= S; under BSP (S = 0) also only after round g closed (coordinator's last_round_)
 *      and its pull of round g succeeds on the shard. Under PIPELINE round g need not be closed
 *      per last_round_ (by design); the trainer's pull of round g must have been served by the
 *      shard with round g closed there (last_closed_round_ >= g), and its reply received, and the
 *      snapshot served must hold every push of a clock <= g (but those in the loss window of (c))
 *      and none of a later clock.
 *  (c) every push is added to the model at most once (assert at every add); with no crash exactly
 *      once; with a crash, a push is missing from the final model only if the shard took it before
 *      the crash and the checkpoint it restored did not hold it in the model (immediate: applied
 *      after that checkpoint; round: its round had not closed when that checkpoint was taken),
 *      i.e. the loss window of docs/faults.md. Lost pushes are not re-sent here: the code
 *      re-sends lost immediate (SSP) pushes (client/unsaved_pushes.h), which this model does not
 *      include, so its SSP loss window is wider than the code's; round pushes are not re-sent.
 *  No shard reply is ever FAILED_PRECONDITION to a trainer (it would end the trainer); under
 *  PIPELINE that includes a pull more than PULL_AHEAD rounds past the shard's last closed round.
 *
 * FOUND AND FIXED (BSP + CRASH, deadlock check): the shard closes round r, a checkpoint is
 * written, and the shard restarts before the coordinator got the reply (reply lost or past its
 * deadline, then the restart during the coordinator's backoff). Restored, last_closed_round_ = r
 * but close_results_ is empty; the coordinator resends SetMembership(round r-1) (ignored: the
 * shard is past it) and CloseRound(r), which the code answered FAILED_PRECONDITION ("the open round
 * is r+1") on every retry: no grant was ever sent again and the job stalled. CloseRound now answers
 * OK for any round at or below last_closed_round_; variant NO_CLOSE_PAST keeps the old rule and
 * check_model.sh expects its counterexample.
 *
 * Run: tests/model/check_model.sh   (or: spin -a [-D...] round_protocol.pml &&
 *      gcc -DSAFETY -o pan pan.c && ./pan -m200000)
 */

#define NT 2            /* trainers: the channel layouts below assume 2 */
#ifndef R
#define R 3             /* clocks each trainer pushes: 1..R; rounds 1..R */
#endif
#ifdef SSP
#ifndef S
#define S 1
#endif
#else
#define S 0             /* BSP */
#endif
#ifdef CRASH
#define MAXCRASH 1
#else
#define MAXCRASH 0
#endif
#ifndef MAXLOSS
#define MAXLOSS 1
#endif
#ifndef PULL_AHEAD
#define PULL_AHEAD 1    /* PIPELINE: a pull of a round further past last_closed_round_ fails */
#endif
#if defined(PIPELINE) && defined(SSP)
#error "PIPELINE models BSP rounds; SSP closes none"
#endif
#define NONE 255
#define IDX(t, c) ((t) * (R + 1) + (c))
#define MIN2(a, b) ((a) < (b) -> (a) : (b))

mtype = { OK, UNAVAIL, FAILPRE };

/* ---- the shard's volatile state (ParameterTable) ---- */
bool reconciled = true;      /* membership_received_ */
byte lcr = 0;                /* last_closed_round_ */
byte lastseq[NT];            /* last_sequence_ */
byte lastcut[NT];            /* last_cut_ (0: none; clocks start at 1) */
byte pend[NT];               /* pending_: bit c = a ROUND push of clock c waits */
byte closedset = 0;          /* close_results_: bit r = round r closed by this incarnation */
byte model[NT * (R + 1)];    /* the live model: times push (t,c) was added */
byte inc = 0;                /* shard incarnation (new at every start) */
bool changed = false;        /* durable state changed since the last checkpoint */

/* ---- the checkpoint (DurableState) ---- */
byte ck_lcr = 0;
byte ck_lastseq[NT];
byte ck_lastcut[NT];
byte ck_model[NT * (R + 1)];

/* ---- coordinator state read by assertions ---- */
byte last_round = 0;         /* Coordinator::last_round_ */

/* ---- ghosts ---- */
byte crashes = 0;
byte losses = 0;
bool taken_before_crash[NT * (R + 1)];
byte restored[NT * (R + 1)]; /* the model the crash restored */
byte rep_clock[NT];          /* last clock each trainer reported */
byte pulled[NT];             /* PIPELINE: last round whose pull the shard served to the trainer */
byte trainers_done = 0;
bool coordinator_done = false;

chan rep = [NT * (R + 1)] of { byte, byte };       /* ClockReport: trainer, clock */
chan grant[NT] = [R + 1] of { byte };              /* Proceed: clock */
/* the coordinator's action queue: round to close (0: none), cuts, grants (NONE: none) */
chan actions = [2 * (R + 1)] of { byte, byte, byte, byte, byte };

inline store_apply(t, c, res) {
  if
  :: !reconciled -> res = UNAVAIL
  :: else ->
    if
    :: c <= lastseq[t] -> res = OK                 /* duplicate: acknowledged, not taken */
    :: else ->
#ifdef SSP
      model[IDX(t, c)]++;
      assert(model[IDX(t, c)] <= 1);               /* at most once */
      res = OK;
#else
      if
      :: c <= lastcut[t] -> res = FAILPRE          /* late: its round has closed */
      :: c > lastcut[t] && (pend[t] >> c) != 0 -> res = FAILPRE  /* out of clock order */
      :: c > lastcut[t] && (pend[t] >> c) == 0 -> pend[t] = pend[t] | (1 << c); res = OK
      fi;
#endif
      if
      :: res == OK ->
        lastseq[t] = c;
        changed = true;
        if
        :: crashes == 0 -> taken_before_crash[IDX(t, c)] = true
        :: else -> skip
        fi
      :: else -> skip
      fi
    fi
  fi
}

/* CloseRound(r) with cuts c0, c1 (NONE: not cut) */
inline take_cut(t, cut) {
  if
  :: cut != NONE ->
    if
    :: cut > lastcut[t] -> lastcut[t] = cut; changed = true
    :: else -> skip
    fi;
    k = 1;
    do
    :: k <= cut && k <= R ->
      if
      :: (pend[t] >> k) & 1 ->
        model[IDX(t, k)]++;
        assert(model[IDX(t, k)] <= 1);             /* at most once */
        pend[t] = pend[t] & ~(1 << k)
      :: else -> skip
      fi;
      k++
    :: else -> break
    od
  :: else -> skip
  fi
}

#ifdef NO_CLOSE_PAST
#define CLOSED_HERE(r) ((closedset >> (r)) & 1)
#else
#define CLOSED_HERE(r) (((closedset >> (r)) & 1) || (r) <= lcr)
#endif

inline store_close(r, c0, c1, res) {
  if
  :: !reconciled -> res = UNAVAIL
  :: reconciled && CLOSED_HERE(r) -> res = OK            /* close_results_ */
  :: reconciled && !CLOSED_HERE(r) && r != lcr + 1 -> res = FAILPRE
  :: reconciled && !CLOSED_HERE(r) && r == lcr + 1 ->
    take_cut(0, c0);
    take_cut(1, c1);
    lcr = r;
    changed = true;
    closedset = closedset | (1 << r);
    res = OK
  fi
}

inline store_setmembers(round) {
  reconciled = true;
  if
  :: round > lcr -> lcr = round; changed = true  /* catch up: the rounds skipped are lost */
  :: else -> skip
  fi
}

/* The reply of a call made while the shard had incarnation `seen`. */
inline deliver(seen, res) {
  if
  :: inc != seen -> res = UNAVAIL                       /* the shard died: reply lost */
  :: inc == seen && losses < MAXLOSS -> losses++; res = UNAVAIL  /* lost on the network */
  :: inc == seen -> skip
  fi
}

#ifdef PIPELINE
/* (b) under PIPELINE: a pull of round g is served round g's snapshot (the live model, as no later
   round can close before this trainer pushes clock g+1): every push of a clock <= g is in it
   (missing only in the loss window, as in the Monitor), and none of a later clock. */
inline check_served(g, i) {
  assert(lcr == g);
  i = 0;
  do
  :: i < NT * (R + 1) ->
    if
    :: i % (R + 1) == 0 -> skip
    :: i % (R + 1) != 0 && i % (R + 1) <= g ->
      assert(model[i] == 1 || (crashes > 0 && taken_before_crash[i] && restored[i] == 0))
    :: i % (R + 1) > g -> assert(model[i] == 0)
    fi;
    i++
  :: else -> break
  od;
  i = 0
}
#endif

proctype Trainer(byte t) {
  byte c = 0, g, seen, i = 0;
  mtype res;
  grant[t]?g;
  assert(g == 0);
  do
  :: c == R -> break
  :: c < R ->
    /* Protocol::Push: sequence c+1, clock c+1; retried on UNAVAILABLE with the same sequence */
    do
    :: atomic { reconciled -> seen = inc; store_apply(t, c + 1, res) };
       atomic { deliver(seen, res) };
       if
       :: res == OK -> break
       :: res == UNAVAIL -> skip
       :: else -> assert(res != FAILPRE)           /* the trainer would end with an error */
       fi
    od;
    /* Protocol::Report */
    atomic { rep!t, c + 1; rep_clock[t] = c + 1 };
    /* AwaitProceed */
    grant[t]?g;
    assert(g == c + 1);
    /* (b) staleness: starting clock g+1 needs g - min reported clock <= S */
    assert(g - MIN2(rep_clock[0], rep_clock[1]) <= S);
#if defined(PIPELINE)
    /* Pull(round g), retried on UNAVAILABLE. A pull of a round not closed yet parks until the
       shard closes a round >= g; its deadline answers UNAVAILABLE and the retry parks again, so
       nothing changes until a close of g or a crash (which ends the park UNAVAILABLE): the park
       is modelled as waiting for one of those, and a park nothing can end shows as a deadlock. */
    do
    :: atomic { reconciled -> seen = inc; assert(g <= lcr + PULL_AHEAD) };  /* else FAILPRE */
       atomic {
         (inc == seen && lcr >= g) || inc != seen ->
         if
         :: inc == seen -> res = OK; pulled[t] = g; check_served(g, i)  /* round g closed here */
         :: else -> res = UNAVAIL                           /* the crash ended the pull */
         fi
       };
       atomic { deliver(seen, res) };
       if
       :: res == OK -> break
       :: else -> skip
       fi
    od;
    assert(pulled[t] == g);                         /* (b): the pull of round g was served */
#ifdef CLOSED_BEFORE_GRANT
    assert(last_round >= g);                        /* not by design: expected to fail */
#endif
#elif !defined(SSP)
    assert(last_round >= g);                        /* BSP: round g closed before g+1 starts */
    /* Pull(round g): retried on UNAVAILABLE; FAILED_PRECONDITION if g is not closed */
    atomic { reconciled -> assert(lcr >= g) };
#endif
    c = g
  od;
  trainers_done++
}

/* BoundedStalenessPolicy::OnClock + Evaluate, Coordinator::EnqueueDecisions */
inline evaluate() {
  mn = MIN2(clk[0], clk[1]);
  r = 0;
  c0 = NONE;
  c1 = NONE;
  g0 = NONE;
  g1 = NONE;
#ifndef SSP
  assert(p_lcr + 1 >= mn);            /* at most one round per evaluation here */
  if
  :: p_lcr < mn ->
    p_lcr++;
    r = p_lcr;
    if
    :: hasopen[0] -> c0 = opencut[0]; hasopen[0] = false
    :: else -> skip
    fi;
    if
    :: hasopen[1] -> c1 = opencut[1]; hasopen[1] = false
    :: else -> skip
    fi
  :: else -> skip
  fi;
#endif
  if
  :: waiting[0] && clk[0] - mn <= S -> g0 = clk[0]; waiting[0] = false
  :: else -> skip
  fi;
  if
  :: waiting[1] && clk[1] - mn <= S -> g1 = clk[1]; waiting[1] = false
  :: else -> skip
  fi;
  if
  :: r != 0 || g0 != NONE || g1 != NONE -> assert(nfull(actions)); actions!r, c0, c1, g0, g1
  :: else -> skip
  fi
}

/* Coordinator::Deliver: the grants of an action */
inline send_grants(g0, g1) {
  if
  :: g0 != NONE -> grant[0]!g0
  :: else -> skip
  fi;
  if
  :: g1 != NONE -> grant[1]!g1
  :: else -> skip
  fi
}

active proctype Coordinator() {
  byte t, c, r, c0, c1, g0, g1, k, seen, mn, p_lcr = 0, known_inc = 0, stuck_inc;
  byte clk[NT], opencut[NT];
  bool waiting[NT], hasopen[NT];
  bool dirty = false, stuck = false;
  bool granted = false;        /* PIPELINE: the front action's grants went out */
  mtype res;
  /* the start gate opens with both trainers at clock 0: both granted */
  actions!0, NONE, NONE, 0, 0;
  do
  :: rep?t, c ->
    atomic {
      clk[t] = c;
#ifndef SSP
      opencut[t] = c;
      hasopen[t] = true;
#endif
      waiting[t] = true;
      evaluate()
    }
  :: inc != known_inc -> known_inc = inc; dirty = true        /* ProbeStores sees a restart */
  :: dirty && (!stuck || inc != stuck_inc) ->
    atomic { seen = inc; res = OK; store_setmembers(last_round) };
    atomic { deliver(seen, res) };
    if
    :: res == OK -> dirty = false; known_inc = seen; stuck = false
    :: else -> skip                                          /* StoreCallFailed: stays dirty */
    fi
  :: !dirty && nempty(actions) && (!stuck || inc != stuck_inc) ->
    actions?<r, c0, c1, g0, g1>;
#ifdef PIPELINE
    if
    :: !granted -> atomic { send_grants(g0, g1); granted = true }   /* once, before the close */
    :: else -> skip
    fi;
#endif
    if
    :: r > 0 && r > last_round ->
      atomic { seen = inc; store_close(r, c0, c1, res) };
      atomic { deliver(seen, res) };
      if
      :: res == OK -> last_round = r; stuck = false
      :: res == UNAVAIL -> dirty = true; stuck = false
      :: res == FAILPRE -> dirty = true; stuck = true; stuck_inc = seen
      fi
    :: else -> res = OK
    fi;
    if
    :: res == OK ->
      atomic {
        actions?r, c0, c1, g0, g1;
#ifdef PIPELINE
        granted = false
#else
        send_grants(g0, g1)
#endif
      }
    :: else -> skip
    fi
  :: trainers_done == NT && empty(actions) -> break
  od;
  coordinator_done = true
}

active proctype Checkpointer() {
  byte i;
end:
  do
  :: atomic {
       crashes == 0 && changed ->
       changed = false;
       ck_lcr = lcr;
       i = 0;
       do
       :: i < NT -> ck_lastseq[i] = lastseq[i]; ck_lastcut[i] = lastcut[i]; i++
       :: else -> break
       od;
       i = 0;
       do
       :: i < NT * (R + 1) -> ck_model[i] = model[i]; i++
       :: else -> break
       od
     }
  od
}

active proctype Crasher() {
  byte i;
  if
  :: atomic {
       crashes < MAXCRASH && trainers_done < NT ->
       crashes++;
       changed = false;
       inc++;
       reconciled = false;
       lcr = ck_lcr;
       closedset = 0;
       i = 0;
       do
       :: i < NT -> lastseq[i] = ck_lastseq[i]; lastcut[i] = ck_lastcut[i]; pend[i] = 0; i++
       :: else -> break
       od;
       i = 0;
       do
       :: i < NT * (R + 1) -> model[i] = ck_model[i]; restored[i] = ck_model[i]; i++
       :: else -> break
       od
     }
  :: skip
  fi
}

/* (c): checked once the job is over */
active proctype Monitor() {
  byte t, c;
  (trainers_done == NT && coordinator_done);
  atomic {
    t = 0;
    do
    :: t < NT ->
      c = 1;
      do
      :: c <= R ->
        assert(model[IDX(t, c)] <= 1);
#if defined(CRASH) && !defined(STRICT_EXACTLY_ONCE)
        /* missing only if taken before the crash and not in the restored checkpoint's model */
        assert(model[IDX(t, c)] == 1 ||
               (crashes > 0 && taken_before_crash[IDX(t, c)] && restored[IDX(t, c)] == 0));
#else
        assert(model[IDX(t, c)] == 1);              /* exactly once */
#endif
        c++
      :: else -> break
      od;
      t++
    :: else -> break
    od
  }
}

init {
  atomic {
    run Trainer(0);
    run Trainer(1)
  }
}
