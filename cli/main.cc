// The tensoropt command: argument parsing, dispatch, and exit codes
// (0 success, 1 internal fault, 2 bad input or usage).
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>
#if defined(__GLIBC__)
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>
#endif

#include "cli/commands.h"
#include "cli/schedule_command.h"
#include "cli/simulate_command.h"
#include "cli/flag_errors.h"
#include "graph/error.h"
#include "launcher/build_info.h"
#include "launcher/devices.h"
#include "launcher/runtime/allocator.h"
#include "launcher/runtime/backend_registry.h"
#include "launcher/train/one_device.h"
#include "launcher/elastic/join.h"
#include "launcher/elastic/launch.h"
#include "launcher/launch/local.h"
#include "launcher/train/worker.h"
#include "cli/profile_command.h"

namespace {

namespace cli = tensoropt::cli;

#if defined(__GLIBC__) && defined(__linux__)
// `plan` touches a few hundred MiB of fresh heap (strategy spaces, FT's factors and records, the
// plan file) and this many 4 KiB page faults cost about a fifth of its time on GPT-2 XL. glibc
// backs its heap with transparent huge pages when the tunable glibc.malloc.hugetlb=1 is set, which
// it reads only at start-up: so `plan` runs itself again with it once. Where the kernel has THP
// off, or the user set the tunable (to 0 as well), nothing changes; if the exec fails, plan goes
// on as it is. Only once: the restarted process finds TENSOROPT_RESTARTED (and removes it, so no
// child sees it). Not for a setuid or otherwise secure process (glibc drops the tunable there), nor
// when /proc/self/exe is not this program (started through the dynamic loader, say).
void restart_with_huge_pages(int argc, char** argv) {
  if (std::getenv("TENSOROPT_RESTARTED")) {
    unsetenv("TENSOROPT_RESTARTED");
    return;
  }
  if (argc < 2 || std::strcmp(argv[1], "plan") != 0 || getauxval(AT_SECURE) != 0) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.hugetlb")) return;
  const char* started_as = reinterpret_cast<const char*>(getauxval(AT_EXECFN));
  char self[PATH_MAX], started[PATH_MAX];
  if (!started_as || !realpath("/proc/self/exe", self) || !realpath(started_as, started) || std::strcmp(self, started) != 0) return;
  const std::string value = tunables && *tunables ? std::string(tunables) + ":glibc.malloc.hugetlb=1" : "glibc.malloc.hugetlb=1";
  const std::string before = tunables ? tunables : "";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0 || setenv("TENSOROPT_RESTARTED", "1", 1) != 0) return;
  execv(self, argv);
  // exec failed: leave the environment as it was
  unsetenv("TENSOROPT_RESTARTED");
  if (tunables) setenv("GLIBC_TUNABLES", before.c_str(), 1); else unsetenv("GLIBC_TUNABLES");
}
#endif

#if defined(__GLIBC__)
// FT allocates and frees large frontier buffers step after step, on several threads. By default
// glibc hands freed memory at the top of the heap back to the kernel and serves blocks over a
// few MiB with fresh mmaps, so the same pages are faulted in again and again (about a tenth of
// `plan`'s time on GPT-2 and ViT). Keep freed memory for reuse instead.
void keep_freed_memory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
}
#endif

// Each subcommand's options, bound to the fields CLI11 fills in; `command` is set once it is added
// and tells whether it was given.

struct Inspect {
  tensoropt::cli::InspectArgs args;
  int64_t batch = 0;
  CLI::App* command = nullptr;
};

void add_inspect(CLI::App& app, Inspect& o) {
  CLI::App* ins = o.command = app.add_subcommand("inspect", "What is in a model: ops, parameters, FLOPs, activation memory");
  ins->add_option("model", o.args.model, "ONNX model file")->required();
  ins->add_option("--batch,-b", o.batch, "Batch size: sets the batch axis (axis 0) of every data input; a fixed-batch export is re-batched")
      ->check(cli::integer<int64_t>(1));
  ins->add_flag("--json", o.args.json, "Print JSON instead of text (format in docs/cli.md)");
  ins->add_flag("--verbose,-v", o.args.verbose, "List every node with its shapes, FLOPs and saved bytes");
  ins->add_option("--frozen", o.args.frozen, "Freeze the parameters whose names match this glob (*, ?, [...]): kept as buffers, never trained; repeat for several");
}

int run_inspect(Inspect& o) {
  if (o.batch > 0) o.args.batch = o.batch;
  return tensoropt::cli::run_inspect(o.args, std::cout);
}

struct Ops {
  bool markdown = false;
  CLI::App* command = nullptr;
};

void add_ops(CLI::App& app, Ops& o) {
  o.command = app.add_subcommand("ops", "List the supported ONNX ops with their FLOP formulas");
  o.command->add_flag("--markdown", o.markdown, "Print the table of docs/ops.md");
}

struct Plan {
  tensoropt::cli::PlanArgs args;
  CLI::App* command = nullptr;
};

void add_plan(CLI::App& app, Plan& o) {
  tensoropt::cli::PlanArgs& plan = o.args;
  CLI::App* pl = o.command = app.add_subcommand("plan", "The Pareto frontier of (time per step, memory per GPU) over parallel strategies");
  pl->add_option("model", plan.model, "ONNX model file")->required();
  pl->add_option("--gpus,-g", plan.gpus, "GPU counts: 8, a list 1,2,4,8, or a range 1-64 (powers of two)")->required();
  pl->add_option("--cluster,-c", plan.cluster, "Cluster preset (h100-sxm, a100-80gb-sxm, cpu) or a cluster .json file")
      ->capture_default_str();
  pl->add_option("--batch,-b", plan.batch, "Global batch size (default: 8 per GPU at the largest count)")->check(cli::integer<int64_t>(1));
  pl->add_option("--optimizer", plan.optimizer, "sgd, momentum, adam or adamw (costed as adam)")->capture_default_str();
  pl->add_option("--dtype", plan.dtype, "fp32, or bf16 (mixed precision, fp32 master weights)")->capture_default_str();
  pl->add_option("--memory-budget", plan.memory_budget, "Memory per GPU the chosen point must fit, e.g. 60GiB (default: GPU memory less the cluster's reserve)");
  pl->add_option("--epsilon", plan.epsilon, "Keep only points more than a relative epsilon apart (0: exact)")
      ->capture_default_str()->check(cli::number(0, 1, /*hi_open=*/true));
  pl->add_option("--mesh-axes", plan.mesh_axes, "Largest number of device-mesh axes to consider (1-3)")->capture_default_str()->check(cli::integer(1, 3));
  CLI::Option* recompute = pl->add_option("--recompute", plan.recompute_mode,
                 "Which ops may recompute their activations in backward: selective (those that keep something themselves), all (any op, so chains of ops recompute: frontiers reach far lower memory, but are larger and slower to find), none")
      ->capture_default_str();
  pl->add_flag("!--no-recompute", plan.recompute, "Same as --recompute none")->excludes(recompute);
  pl->add_option("--frozen", plan.frozen, "Freeze the parameters whose names match this glob (*, ?, [...]): kept as buffers, never trained; repeat for several");
  pl->add_flag("!--no-zero", plan.zero, "Do not consider ZeRO-2 sharding of optimizer state and gradients");
  pl->add_option("--param-persistence", plan.param_persistence,
                 "Parameters of fewer elements are stored whole on every GPU, never split and gathered at each use (biases, norm scales: as DeepSpeed's stage3_param_persistence_threshold); 0: any parameter may be split")
      ->capture_default_str()->check(cli::integer<int64_t>(0));
  pl->add_option("--profile", plan.profile, "A profile database (tensoropt profile): measured costs where it has them, the analytic model elsewhere");
  pl->add_option("--json", plan.json, "Write the plan file (docs/plan-format.md) to FILE, or - for stdout");
  pl->add_option("--plot", plan.plot, "Draw the frontiers as an SVG file");
  pl->add_option("--dump-space", plan.dump_space, "Write every variable's configurations to FILE (for hand-written strategies)");
  pl->add_flag("--baselines", plan.baselines, "Also cost data parallel, ZeRO-2 and Megatron-style tensor parallel");
  pl->add_option("--rows", plan.rows, "Table rows per GPU count (0: all)")->capture_default_str()->check(cli::integer(0));
  pl->add_option("--planner-memory", plan.planner_memory,
                 "Largest working set of FT, shared by the meshes solved side by side, e.g. 8GiB (0: no limit); a mesh over its share is solved again with epsilon 0.01, or skipped, and named")
      ->capture_default_str();
  pl->add_flag("--exact", plan.exact,
               "Solve every mesh exactly however long it takes; by default a mesh whose exact search passes its work budget (a few tensors read across many layers) is relaxed, and its frontier reported within a proven epsilon");
}

struct Evaluate {
  tensoropt::cli::EvaluateArgs args;
  CLI::App* command = nullptr;
};

void add_evaluate(CLI::App& app, Evaluate& o) {
  tensoropt::cli::EvaluateArgs& eval = o.args;
  CLI::App* ev = o.command = app.add_subcommand("evaluate", "The cost of one strategy, with its breakdown");
  ev->add_option("model", eval.model, "ONNX model file")->required();
  ev->add_option("--strategy,-s", eval.strategy, "A plan file (plan --json) or a strategy file (docs/plan-format.md)")->required();
  ev->add_option("--gpus,-g", eval.gpus, "With a plan file of several GPU counts: which frontier")->check(cli::integer(1));
  ev->add_option("--point,-p", eval.point, "With a plan file: which point (default: the chosen one)")->check(cli::integer(0));
  ev->add_option("--cluster,-c", eval.cluster, "With a strategy file: cluster preset or .json (default h100-sxm); with a plan file it must be the plan's");
  ev->add_option("--batch,-b", eval.batch, "With a strategy file: global batch size (required); with a plan file it must be the plan's")
      ->check(cli::integer<int64_t>(1));
  ev->add_option("--optimizer", eval.optimizer, "With a strategy file: sgd, momentum, adam or adamw (default adam); with a plan file it must be the plan's");
  ev->add_option("--dtype", eval.dtype, "With a strategy file: fp32 or bf16 (default fp32); with a plan file it must be the plan's");
  ev->add_option("--frozen", eval.frozen, "With a strategy file: parameters to freeze, as plan --frozen; with a plan file they must be the plan's");
  ev->add_flag("--json", eval.json, "Print JSON");
  ev->add_option("--profile", eval.profile, "A profile database (tensoropt profile): measured costs where it has them");
  CLI::Option* layer = ev->add_flag("--by-layer", eval.by_layer, "A row per layer: what the strategy does there and what it costs");
  ev->add_flag("--by-node", eval.by_node, "A row per node, as --by-layer")->excludes(layer);
}

struct Run {
  tensoropt::TrainSettings train;
  int gpus = 1;
  std::string device, optimizer = "adam", loss = "cross-entropy";
  int64_t batch = 0;
  std::optional<std::string> rendezvous;
  bool profile_missing = false;
  CLI::App* command = nullptr;
};

void add_run(CLI::App& app, Run& o) {
  tensoropt::TrainSettings& train = o.train;
  CLI::App* rn = o.command = app.add_subcommand("run", "Train the model: forward, loss, backward and optimizer steps, measured against predicted");
  rn->add_option("model", train.model, "ONNX model file")->required();
  rn->add_option("--gpus,-g", o.gpus, "Workers: 1 trains in this process; N > 1 starts N workers here (or, under torchrun/srun/mpirun, must be the world size)")
      ->capture_default_str()->check(cli::integer(1));
  rn->add_option("--rendezvous", o.rendezvous, "Where workers started by torchrun/srun/mpirun meet, or an elastic job's groups (default CONTROL/elastic-store): file:DIR (a shared directory) or redis://HOST:PORT");
  rn->add_option("--device", o.device, "cpu (Eigen kernels) or cuda (one GPU per process; tensoropt devices shows the GPUs); default: cuda where a GPU is visible and this build has CUDA, else cpu");
  rn->add_option("--steps", train.steps, "Training steps")->capture_default_str()->check(cli::integer<int64_t>(1));
  rn->add_option("--batch,-b", o.batch, "Global batch size (default 8; a fixed-batch export is re-batched)")->check(cli::integer<int64_t>(1));
  rn->add_option("--optimizer", o.optimizer, "sgd, momentum (sgd with --momentum, default 0.9), adam or adamw")->capture_default_str();
  rn->add_option("--lr", train.optimizer.lr, "Learning rate")->capture_default_str()->check(cli::number(0));
  rn->add_option("--momentum", train.optimizer.momentum, "SGD momentum")->capture_default_str()->check(cli::number(0));
  rn->add_option("--weight-decay", train.optimizer.weight_decay, "Weight decay (L2 for sgd and adam, decoupled for adamw)")
      ->capture_default_str()->check(cli::number(0));
  rn->add_option("--loss", o.loss, "cross-entropy (logits [B,C] or [B,T,C] against integer labels) or mse")->capture_default_str();
  rn->add_option("--seed", train.seed, "Seed of synthetic data, weight initialisation and dropout")
      ->capture_default_str()->check(cli::integer<uint64_t>(0));
  rn->add_option("--threads", train.threads, "Kernel threads per process (default: OMP_NUM_THREADS, else the cores shared among the processes)")
      ->check(cli::integer(1));
  rn->add_option("--data", train.data, "Inputs as a NumPy .npy file [N, ...] (default: synthetic data)");
  rn->add_option("--labels", train.labels, "Labels (cross-entropy) or targets (mse) as a .npy file [N, ...]");
  rn->add_option("--frozen", train.frozen, "Freeze the parameters whose names match this glob (repeatable)");
  rn->add_option("--cluster,-c", train.cluster, "Cluster preset or .json whose analytic model predicts the step (default: cpu on --device cpu, h100-sxm on cuda)");
  rn->add_option("--save", train.save, "Write the trained model to FILE.onnx and the optimizer state to FILE.onnx.optim");
  rn->add_option("--resume", train.resume, "Start from a checkpoint written by --save");
  rn->add_option("--dtype", train.dtype, "fp32, or bf16 (mixed precision: bf16 activations and gradients, fp32 master weights; default: the plan's, fp32)");
  rn->add_option("--plan", train.plan, "A plan file (plan --gpus N --json FILE) whose point to run; without it, run --gpus N > 1 plans first");
  rn->add_option("--point", train.point, "The plan's point to run (default: the one the plan chose)")->check(cli::integer(0));
  rn->add_option("--profile", train.profile, "A profile database (tensoropt profile) pricing the prediction where it has measurements");
  rn->add_flag("--profile-missing", o.profile_missing, "Before the first step, time what --profile DB lacks for this model, batch and worker count (tensoropt profile), then plan with it");
  rn->add_option("--report", train.report, "Write the steps and measured against predicted as JSON (docs/runtime.md)");
  CLI::Option* elastic = rn->add_flag("--elastic", train.elastic.on, "Resizable: tensoropt resize DIR --gpus N changes the worker count while the job runs (docs/runtime.md)");
  rn->add_option("--min-gpus", train.elastic.min_gpus, "With --elastic: the fewest workers (default 1)")->needs(elastic)->check(cli::integer(1));
  rn->add_option("--max-gpus", train.elastic.max_gpus, "With --elastic: the most workers (default --gpus)")->needs(elastic)->check(cli::integer(1));
  rn->add_option("--checkpoint-every", train.elastic.checkpoint_every,
                 "With --elastic: write the job's checkpoint (CONTROL/checkpoint.onnx) every K steps, from which a lost worker is survived (default: after 100 steps, then as often as costs about 0.5% of the time; 0: never, and a lost worker ends the job)")
      ->needs(elastic)->check(cli::integer<int64_t>(0));
  rn->add_option("--rejoin-timeout", train.elastic.rejoin_seconds,
                 "With --elastic: left with fewer workers than --min-gpus, seconds to wait for tensoropt resize before the job stops")
      ->capture_default_str()->needs(elastic)->check(cli::number(0));
  rn->add_option("--control", train.elastic.control, "With --elastic: the control directory that tensoropt status and resize name (default: in the launcher's private directory, printed)")
      ->needs(elastic);
  rn->add_flag("--kernel-times", train.kernel_times, "Time every node's kernels (CUDA events on a GPU) and print where the step's time goes, largest first; in --report as kernel_times");
}

struct Job {
  tensoropt::cli::JobArgs status, resize, join;
  std::optional<int> join_threads;
  CLI::App* status_command = nullptr;
  CLI::App* resize_command = nullptr;
  CLI::App* join_command = nullptr;
};

void add_job(CLI::App& app, Job& o) {
  CLI::App* st = o.status_command = app.add_subcommand("status", "An elastic job's workers, step, plan point and resizes (run --elastic --control DIR)");
  st->add_option("dir", o.status.dir, "The job's control directory")->required();
  st->add_flag("--json", o.status.json, "Print JSON");
  CLI::App* rs = o.resize_command = app.add_subcommand("resize", "Ask an elastic job to change its worker count; returns at once (tensoropt status shows the resize)");
  rs->add_option("dir", o.resize.dir, "The job's control directory")->required();
  rs->add_option("--gpus,-g", o.resize.gpus, "The new worker count, within the job's --min-gpus..--max-gpus")->required()->check(cli::integer(1));
  CLI::App* jn = o.join_command = app.add_subcommand("join", "Offer this machine's worker to a running elastic job whose control directory it shares; the job grows when it has room (docs/runtime.md)");
  jn->add_option("dir", o.join.dir, "The job's control directory (shared with the launcher's machine)")->required();
  jn->add_option("--threads", o.join_threads, "Kernel threads of the worker here (default: the launcher's)")->check(cli::integer(1));
}

struct Simulate {
  tensoropt::cli::SimulateArgs args;
  CLI::App* command = nullptr;
};

void add_simulate(CLI::App& app, Simulate& o) {
  CLI::App* c = o.command = app.add_subcommand("simulate", "Simulate a workload of training jobs (Pollux's CSV) on a cluster of G GPUs under scheduling policies, job speeds from tensoropt's plans");
  c->add_option("workload", o.args.workload, "The workload: Pollux's CSV (name,time,application,num_replicas,batch_size)")->required();
  c->add_option("--gpus,-g", o.args.gpus, "GPUs in the cluster")->required()->check(cli::integer(1));
  c->add_option("--policy,-p", o.args.policies, "Policies, comma-separated: fifo, tiresias, doubling, edl, frontier")->required();
  c->add_option("--cluster", o.args.cluster, "The cluster preset or file the jobs are planned on (as plan's)");
  c->add_option("--mapping", o.args.mapping, "Which model and batch stand for each application, and each job's samples (default: models/pollux.json)");
  c->add_option("--json", o.args.json, "Write the results as JSON to FILE (- for stdout)");
  c->add_option("--plot", o.args.plot, "Write the distribution of job completion times per policy as an SVG to FILE");
  c->add_option("--profile", o.args.profile, "A profile database (tensoropt profile) the plans price measured costs from");
  c->add_option("--resizes", o.args.resizes, "How elastic policies change a running job's count: elastic (in place, a resize's pause) or restart (a stop-resume each time)")
      ->capture_default_str();
}

struct Schedule {
  tensoropt::cli::ScheduleArgs args;
  CLI::App* command = nullptr;
};

void add_schedule(CLI::App& app, Schedule& o) {
  CLI::App* c = o.command = app.add_subcommand("schedule", "Run a workload of training jobs live on this machine's CPU workers under scheduling policies, beside what simulate predicts");
  c->add_option("workload", o.args.workload, "The workload: Pollux's CSV (name,time,application,num_replicas,batch_size)")->required();
  c->add_option("--gpus,-g", o.args.gpus, "Workers in the cluster (CPU worker processes of one thread, standing for GPUs)")->required()->check(cli::integer(1));
  c->add_option("--policy,-p", o.args.policies, "Policies, comma-separated, run one after another: fifo, tiresias, doubling, edl, frontier")->required();
  c->add_option("--mapping", o.args.mapping, "Which model and batch stand for each application, and each job's samples (default: models/pollux.json)");
  c->add_option("--json", o.args.json, "Write the measured and predicted results as JSON to FILE (- for stdout)");
  c->add_option("--dir", o.args.dir, "Keep the plans, the jobs' control directories and logs in DIR (default: a temporary directory, removed)");
  c->add_option("--calibration-steps", o.args.calibration_steps, "Steps of each application's calibration run on each worker count")
      ->capture_default_str()->check(cli::integer(3));
  c->add_option("--calibration-seconds", o.args.calibration_seconds, "A calibration run whose steps take under half of this is done again with this long of steps")
      ->capture_default_str()->check(cli::number(0));
  c->add_option("--calibration-repeats", o.args.calibration_repeats, "Runs of each calibration measurement; the median counts")
      ->capture_default_str()->check(cli::integer(1));
}

struct Profile {
  tensoropt::cli::ProfileArgs args;
  CLI::App* command = nullptr;
};

void add_profile(CLI::App& app, Profile& o) {
  tensoropt::cli::ProfileArgs& a = o.args;
  CLI::App* pr = o.command = app.add_subcommand("profile", "Time the runtime's kernels and collectives at the shard shapes and sizes the model's plans use, into a profile database (docs/profile.md)");
  pr->add_option("model", a.model, "ONNX model file")->required();
  pr->add_option("--gpus,-g", a.gpus, "Devices the plans will use: N local workers time side by side")->capture_default_str()->check(cli::integer(1));
  pr->add_option("--batch,-b", a.batch, "Global batch size, as plan --batch")->capture_default_str()->check(cli::integer<int64_t>(1));
  pr->add_option("--device", a.device, "cpu or cuda (default: cuda where a GPU is visible and this build has CUDA, else cpu)");
  pr->add_option("--output,-o", a.output, "The database (default: MODEL-profile.json here); what it holds for this device is not timed again");
  pr->add_option("--dtype", a.dtype, "fp32 or bf16 (mixed precision)")->capture_default_str();
  pr->add_option("--threads", a.threads, "Kernel threads per worker (default: OMP_NUM_THREADS, else the cores shared among the workers)")->check(cli::integer(1));
  pr->add_option("--repeats", a.repeats, "Timed calls per op and direction, after 2 warm-up calls (the median is kept)")->capture_default_str()->check(cli::integer(1));
  pr->add_option("--max-seconds", a.max_seconds, "Stop timing new entries after this long; the rest stays analytic")->check(cli::number(0));
  pr->add_option("--cluster,-c", a.cluster, "Cluster preset or .json whose meshes are walked (default: cpu on cpu, h100-sxm on cuda)");
  pr->add_option("--mesh-axes", a.mesh_axes, "Mesh axes, as plan --mesh-axes")->capture_default_str()->check(cli::integer(1));
}

struct Devices {
  CLI::App* command = nullptr;
};

void add_devices(CLI::App& app, Devices& o) {
  o.command = app.add_subcommand("devices", "The devices run can use here: the CPU, and the CUDA runtime and library versions loaded and the GPUs visible (loads the CUDA module)");
}

// Trains in this process, as one worker of a launched group, or by starting `--gpus` workers here.
int run_run(Run& o, int argc, char** argv) {
  using namespace tensoropt;
  TrainSettings& train = o.train;
  if (o.device.empty()) o.device = runtime::default_device();
  runtime::check_device(o.device);  // an unknown device, or a bad TENSOROPT_GEMM or TENSOROPT_DENORMALS, before anything runs
  train.device = o.device;
  if (train.cluster.empty()) train.cluster = o.device == "cuda" ? "h100-sxm" : "cpu";
  if (o.batch > 0) train.batch = o.batch;
  train.optimizer.kind = runtime::parse_optimizer_kind(o.optimizer);
  if (o.optimizer == "momentum" && train.optimizer.momentum == 0) train.optimizer.momentum = 0.9;
  if (o.loss == "cross-entropy") train.loss = runtime::LossKind::CrossEntropy;
  else if (o.loss == "mse") train.loss = runtime::LossKind::Mse;
  else throw InputError("--loss: expected cross-entropy or mse, got '" + o.loss + "'");
  // A process started by torchrun, srun or mpirun (or by launch_local) is one worker of the group.
  if (std::optional<WorkerPlace> place = worker_place(o.rendezvous)) return run_worker(train, o.gpus, *place, std::cout, std::cerr);
  if (o.rendezvous && train.elastic.on) train.elastic.store = *o.rendezvous;  // where an elastic job's groups meet
  else if (o.rendezvous) throw InputError("--rendezvous is for workers started by a launcher (RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS or OMPI_COMM_WORLD_RANK/SIZE unset), or an elastic job's store");
  runtime::check_local_gpus(o.device, o.gpus, "--gpus");
  if (o.profile_missing) {
    if (!train.profile) throw InputError("--profile-missing needs --profile DB (the database to complete; made when missing)");
    cli::ProfileArgs pa;
    pa.model = train.model;
    pa.gpus = o.gpus;
    pa.batch = train.batch.value_or(8);
    pa.device = o.device;
    pa.output = train.profile;
    pa.dtype = train.dtype.value_or("fp32");
    pa.threads = train.threads;
    pa.cluster = train.cluster;
    std::vector<std::string> args = {argv[0], "profile", pa.model, "--gpus", std::to_string(pa.gpus), "--batch", std::to_string(pa.batch),
                                     "--device", pa.device, "-o", *pa.output, "--dtype", pa.dtype, "--cluster", pa.cluster};
    if (pa.threads > 0) args.insert(args.end(), {"--threads", std::to_string(pa.threads)});
    if (const int code = cli::run_profile(pa, args, std::cout, std::cerr); code != 0) return code;
    std::cout << "\n";
  }
  if (train.elastic.on) return launch_elastic(std::vector<std::string>(argv, argv + argc), o.gpus, train, std::cout, std::cerr);
  if (o.gpus > 1) return launch_local(std::vector<std::string>(argv, argv + argc), o.gpus, train, std::cout, std::cerr);
  return run_training(train, std::cout, std::cerr);
}

// Parses the command line into the options bound to `app`. Returns nothing to go on, else the exit
// code: 0 after printing help, 2 after reporting bad usage in one line (cli/flag_errors.h).
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  cli::require_ranges(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tensoropt: error: " << cli::explain_parse_error(app, e) << "\n";
    return 2;
  }
  return std::nullopt;
}

// Runs `command`, reporting what it throws: bad input (InputError) exits 2, anything else 1.
template <class Command>
int reporting_errors(const Command& command) {
  try {
    return command();
  } catch (const tensoropt::InputError& e) {
    std::cerr << "tensoropt: error: " << e.what() << "\n";
    return 2;
  } catch (const tensoropt::runtime::OutOfMemory& e) {
    std::cerr << "tensoropt: error: " << e.what() << " (a plan point with less memory per device, or a smaller --batch, needs less)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "tensoropt: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tensoropt;
#if defined(__GLIBC__) && defined(__linux__)
  restart_with_huge_pages(argc, argv);
#endif
#if defined(__GLIBC__)
  keep_freed_memory();
#endif
  CLI::App app{"tensoropt: plan and run data and tensor parallel training of ONNX models"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "Print the version, CUDA support and the library versions compiled against (tensoropt devices: those loaded, and the GPUs), then exit");
  Inspect inspect;
  Ops ops;
  Plan plan;
  Evaluate eval;
  Run run;
  Devices devices;
  Profile profile;
  Job job;
  Simulate simulate;
  Schedule schedule;
  add_inspect(app, inspect);
  add_ops(app, ops);
  add_plan(app, plan);
  add_evaluate(app, eval);
  add_run(app, run);
  add_devices(app, devices);
  add_profile(app, profile);
  add_job(app, job);
  add_simulate(app, simulate);
  add_schedule(app, schedule);
  if (std::optional<int> exit_code = parse(app, argc, argv)) return *exit_code;

  return reporting_errors([&] {
    if (version) {
      std::cout << build_info();
      return 0;
    }
    if (*inspect.command) return run_inspect(inspect);
    if (*ops.command) return cli::run_ops(ops.markdown, std::cout);
    if (*plan.command) return cli::run_plan(plan.args, std::cout, std::cerr);
    if (*eval.command) return cli::run_evaluate(eval.args, std::cout, std::cerr);
    if (*run.command) return run_run(run, argc, argv);
    if (*profile.command) return cli::run_profile(profile.args, std::vector<std::string>(argv, argv + argc), std::cout, std::cerr);
    if (*job.status_command) return cli::run_status(job.status, std::cout);
    if (*job.resize_command) return cli::run_resize(job.resize, std::cout);
    if (*job.join_command) return join_elastic(job.join.dir, job.join_threads, std::cout, std::cerr);
    if (*simulate.command) return cli::run_simulate(simulate.args, std::cout, std::cerr);
    if (*schedule.command) return cli::run_schedule(schedule.args, std::cout, std::cerr);
    if (*devices.command) {
      std::cout << devices_info();
      return 0;
    }
    std::cout << app.help();
    return 2;
  });
}
