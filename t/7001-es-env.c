/* 7001-es-env: the ES example's environments against Gymnasium's equations.

   The reference rows below were produced by examples/es/gym_ref.py, an
   independent Python transcription of the step equations Gymnasium
   publishes for CartPole-v1 and Pendulum-v1 (classic_control/cartpole.py
   and pendulum.py), run once by hand on 2026-11-22 with Python 3.11:

       python3 examples/es/gym_ref.py

   The transcription itself was checked against Gymnasium's own classes
   (gymnasium 1.4.0 from its source, numpy 1.24.2): `gym_ref.py
   --gymnasium` runs the same trajectories through CartPoleEnv and
   PendulumEnv and found every state, reward and flag bit-identical (438
   values), and the registered limits (500 and 200 steps, 475) the same.
   Gymnasium is not a dependency of the tests: no package of it reaches
   this machine. Its reset uses numpy's generator, which this code does
   not reproduce, so every trajectory starts from a state set explicitly.
   Each step's state, observation, reward and end flag must match to 1e-9
   relative.
*/
#include "tap.h"

#include "env.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-9

/* CartPole from (0.01, -0.02, 0.03, 0.04): action, then x, x_dot, theta,
   theta_dot, reward, terminated after the step. A fixed pattern for 12
   steps, then push right until the pole falls left (step 23). */
/* clang-format off */
static const double s_cartpole[][7] = {
    {0, 0.009600000000000001, -0.21553901710278936, 0.030799999999999998, 0.34199522377603914, 1.0, 0},
    {1, 0.005289219657944213, -0.020868498014729647, 0.03763990447552078, 0.059181706756417596, 1.0, 0},
    {1, 0.0048718496976496205, 0.1736941202746195, 0.038823538610649126, -0.22139198924408143, 1.0, 0},
    {0, 0.00834573210314201, -0.02196063445310384, 0.0343956988257675, 0.08328024585169769, 1.0, 0},
    {1, 0.007906519414079934, 0.17265181365319435, 0.036061303742801455, -0.19835542243183885, 1.0, 0},
    {0, 0.011359555687143821, -0.022966871728019173, 0.03209419529416468, 0.10548156243130258, 1.0, 0},
    {0, 0.010900218252583438, -0.2185337018134223, 0.03420382654279073, 0.40811481331658434, 1.0, 0},
    {1, 0.006529544216314992, -0.023912997684876452, 0.042366122809122414, 0.12640847018053863, 1.0, 0},
    {1, 0.006051284262617463, 0.17057722061447592, 0.04489429221273319, -0.1526131658953686, 1.0, 0},
    {1, 0.00946282867490698, 0.3650285490004516, 0.041842028894825814, -0.4308017820943263, 1.0, 0},
    {0, 0.016763399654916012, 0.1693398497464374, 0.03322599325293929, -0.12522768070310092, 1.0, 0},
    {0, 0.02015019664984476, -0.026241959066365117, 0.03072143963887727, 0.17774975534743936, 1.0, 0},
    {1, 0.019625357468517457, 0.16842718630460604, 0.034276434745826055, -0.10508549343064455, 1.0, 0},
    {1, 0.02299390119460958, 0.3630415936861219, 0.032174724877213165, -0.3867603370622786, 1.0, 0},
    {1, 0.030254733068332016, 0.5576923860858698, 0.02443951813596759, -0.6691276728159467, 1.0, 0},
    {1, 0.041408580790049415, 0.7524661420741057, 0.01105696467964866, -0.9540165557449956, 1.0, 0},
    {1, 0.056457903631531525, 0.9474376069177406, -0.008023366435251252, -1.2432051944218692, 1.0, 0},
    {1, 0.07540665576988634, 1.1426616024627057, -0.03288747032368863, -1.5383906066414565, 1.0, 0},
    {1, 0.09825988781914045, 1.3381634806597833, -0.06365528245651776, -1.8411520226122118, 1.0, 0},
    {1, 0.1250231574323361, 1.533927538306315, -0.10047832290876199, -2.1529054006957455, 1.0, 0},
    {1, 0.1557017081984624, 1.729882951900839, -0.1435364309226769, -2.4748469557860644, 1.0, 0},
    {1, 0.1902993672364792, 1.9258870552674945, -0.19303337003839818, -2.8078846009938756, 1.0, 0},
    {1, 0.22881710834182908, 2.1217062367256245, -0.24919106205827568, -3.152557921771427, 1.0, 1},
};
/* clang-format on */

/* Pendulum from (2.9, 7.7): torque, then th, thdot, cos th, sin th after
   the step and the step's reward. The velocity clips at +8 (steps 1-2),
   the angle passes pi and then 2 pi (the cost's angle wraps), torques of
   3.5 and -9 are clipped to +-2. */
/* clang-format off */
static const double s_pendulum_a[][6] = {
    {2.0, 3.3, 8.0, -0.9874797699088649, -0.1577456941432482, -14.343000000000002},
    {3.5, 3.6999999999999997, 8.0, -0.8481000317104083, -0.529836140908493, -15.303394576972163},
    {-0.7, 4.074881144715931, 7.4976228943186305, -0.5951946344390008, -0.8035815746612314, -13.073336331228496},
    {1.9, 4.433877980382067, 7.179936713322707, -0.27492433119087906, -0.9614658663308063, -10.501652180495393},
    {-2.0, 4.741819846060797, 6.158837313574603, 0.029426617142572813, -0.9995669433327337, -8.579086709678915},
    {-9.0, 4.997277951364549, 5.109162106075052, 0.28105089926957566, -0.9596928633785722, -6.172935190237821},
    {0.0, 5.216747574291605, 4.389392458541123, 0.4832459986024238, -0.8754846114208669, -4.263911470354548},
    {0.3, 5.4056365242903786, 3.777778999975473, 0.6390384764852571, -0.7691747691983932, -3.064056053637024},
    {1.2, 5.574681420444213, 3.3808979230766782, 0.7593362440364988, -0.6506984466652297, -2.198693283615897},
    {-1.5, 5.708075124848101, 2.667874088077756, 0.8391323763416362, -0.5439272515467841, -1.6472748341455508},
    {2.0, 5.836071557318984, 2.559928649417668, 0.9016987693854907, -0.4323648104190392, -1.0465069368050264},
    {2.0, 5.9628543093991535, 2.5356550416033885, 0.9491312452520868, -0.314880738194992, -0.8592341743253454},
    {-2.0, 6.06282903379701, 1.9994944879571444, 0.9758196379905731, -0.21857729550881264, -0.7495665971398757},
    {-2.0, 6.139607109613287, 1.535561516325535, 0.9897103453375019, -0.14308540223210323, -0.45235470795615684},
    {0.5, 6.21476948284586, 1.5032474646514575, 0.9976605502307279, -0.06836246421334827, -0.2566596158583848},
    {-0.25, 6.285493263670432, 1.4144756164914463, 0.9999973366696004, 0.002307954441894861, -0.2307185190173668},
    {1.0, 6.363803592786575, 1.5662065823228675, 0.9967521056734767, 0.08053098680315679, -0.20107945362804935},
    {-1.0, 6.437633833907837, 1.476604822425235, 0.9880965170299759, 0.1538352138921075, -0.2527996138253576},
    {0.0, 6.517232895550053, 1.5919812328443157, 0.9727356625884057, 0.23191664607935164, -0.2418905275694732},
    {0.05, 6.605903831420244, 1.7734187174038294, 0.9483767547151877, 0.31714591455020935, -0.30822119819488164},
};
/* clang-format on */

/* Pendulum from (-8.0, -7.95): the velocity clips at -8 (steps 1-4) and the
   angle passes -3 pi. */
/* clang-format off */
static const double s_pendulum_b[][6] = {
    {-2.0, -8.4, -8.0, -0.5192886541166856, -0.8545989080882804, -9.271702689484052},
    {-2.5, -8.8, -8.0, -0.811093014061656, -0.5849171928917617, -10.884904443740384},
    {0.0, -9.200000000000001, -8.0, -0.974843621404164, -0.22288991410024592, -12.734356197996718},
    {1.0, -9.600000000000001, -8.0, -0.9846878557941267, 0.1743267812229814, -14.908807952253051},
    {2.0, -9.978462745704139, -7.569254914082764, -0.8505927487621641, 0.5258250429118282, -15.203354621733606},
    {-0.5, -10.340957052299084, -7.249886131898893, -0.6088556479333304, 0.7932810346779283, -12.426879132083245},
};
/* clang-format on */

static bool
s_close(double got, double want)
{
    return fabs(got - want) <= TOL * fmax(1.0, fabs(want));
}

static void
s_test_cartpole(void)
{
    const es_env_t *e = &es_env_cartpole;
    void *st = malloc(e->state_size);
    double s0[4] = {0.01, -0.02, 0.03, 0.04}, s[4], obs[4], r;
    size_t n = sizeof s_cartpole / sizeof s_cartpole[0];
    e->set_state(st, s0);
    int bad = 0;
    es_env_status_t done = ES_ENV_RUNNING;
    for (size_t t = 0; t < n; t++) {
        const double *row = s_cartpole[t];
        es_action_t a = {.index = (int)row[0]};
        done = e->step(st, &a, &r);
        e->get_state(st, s);
        e->observe(st, obs);
        bool good = s_close(r, row[5]) && (done != ES_ENV_RUNNING) == (row[6] != 0) &&
                    (row[6] == 0 || done == ES_ENV_TERMINATED);
        for (int i = 0; i < 4; i++)
            good = good && s_close(s[i], row[1 + i]) && obs[i] == s[i];
        if (!good) {
            bad++;
            diag("cartpole step %zu: state %.17g %.17g %.17g %.17g reward %g done %d", t + 1, s[0],
                 s[1], s[2], s[3], r, done);
            diag("            want: state %.17g %.17g %.17g %.17g reward %g done %g", row[1],
                 row[2], row[3], row[4], row[5], row[6]);
        }
    }
    is_int(bad, 0, "cartpole: %zu steps match Gymnasium's equations", n);
    is_int(done, ES_ENV_TERMINATED, "cartpole: the pole falls on step %zu (terminated)", n);
    es_action_t a = {.index = 1};
    es_env_status_t again = e->step(st, &a, &r);
    ok(again == ES_ENV_TERMINATED && r == 0.0, "cartpole: stepping after the end gives reward 0");

    /* the time limit: a linear controller keeps the pole up, so the episode
       must run exactly 500 steps and end truncated, each step paying 1 */
    int trunc_ok = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        e->reset(st, seed);
        int t = 0;
        double ret = 0.0;
        do {
            e->observe(st, obs);
            es_action_t c = {.index = obs[2] + 0.5 * obs[3] + 0.01 * obs[0] + 0.1 * obs[1] > 0};
            done = e->step(st, &c, &r);
            ret += r;
            t++;
        } while (!done && t < 1000);
        trunc_ok += t == 500 && done == ES_ENV_TRUNCATED && ret == 500.0;
    }
    is_int(trunc_ok, 3, "cartpole: truncated after exactly 500 steps, return 500");

    /* reset: each component uniform in [-0.05, 0.05), a pure function of
       the seed */
    double lo = 1, hi = -1, sum = 0;
    int in_range = 1;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        e->reset(st, seed);
        e->get_state(st, s);
        for (int i = 0; i < 4; i++) {
            in_range &= s[i] >= -0.05 && s[i] < 0.05;
            lo = fmin(lo, s[i]);
            hi = fmax(hi, s[i]);
            sum += s[i];
        }
    }
    ok(in_range && lo < -0.049 && hi > 0.049 && fabs(sum / 8000) < 0.002,
       "cartpole: reset states fill [-0.05, 0.05) (min %.4f max %.4f mean %.5f)", lo, hi,
       sum / 8000);
    double s1[4], s2[4];
    e->reset(st, 42);
    e->get_state(st, s1);
    e->reset(st, 43);
    e->get_state(st, s2);
    e->reset(st, 42);
    e->get_state(st, s);
    ok(memcmp(s, s1, sizeof s) == 0 && memcmp(s1, s2, sizeof s) != 0,
       "cartpole: the same seed gives the same start, another seed another");
    free(st);
}

static int
s_run_pendulum(const char *what, const double *start, const double (*rows)[6], size_t n)
{
    const es_env_t *e = &es_env_pendulum;
    void *st = malloc(e->state_size);
    double s[2], obs[3], r;
    e->set_state(st, start);
    int bad = 0;
    for (size_t t = 0; t < n; t++) {
        double u = rows[t][0];
        es_action_t a = {.u = &u};
        es_env_status_t done = e->step(st, &a, &r);
        e->get_state(st, s);
        e->observe(st, obs);
        bool good = done == ES_ENV_RUNNING && s_close(s[0], rows[t][1]) &&
                    s_close(s[1], rows[t][2]) && s_close(obs[0], rows[t][3]) &&
                    s_close(obs[1], rows[t][4]) && obs[2] == s[1] && s_close(r, rows[t][5]);
        if (!good) {
            bad++;
            diag("%s step %zu: th %.17g thdot %.17g obs %.17g %.17g reward %.17g done %d", what,
                 t + 1, s[0], s[1], obs[0], obs[1], r, done);
            diag("     want: th %.17g thdot %.17g obs %.17g %.17g reward %.17g", rows[t][1],
                 rows[t][2], rows[t][3], rows[t][4], rows[t][5]);
        }
    }
    free(st);
    return bad;
}

static void
s_test_pendulum(void)
{
    const es_env_t *e = &es_env_pendulum;
    const double a0[2] = {2.9, 7.7}, b0[2] = {-8.0, -7.95};
    size_t na = sizeof s_pendulum_a / sizeof s_pendulum_a[0];
    size_t nb = sizeof s_pendulum_b / sizeof s_pendulum_b[0];
    is_int(s_run_pendulum("pendulum a", a0, s_pendulum_a, na), 0,
           "pendulum: %zu steps with clipping and wrapping match Gymnasium's equations", na);
    is_int(s_run_pendulum("pendulum b", b0, s_pendulum_b, nb), 0,
           "pendulum: %zu steps at the negative velocity limit match", nb);

    /* never terminates; truncated on step 200 */
    void *st = malloc(e->state_size);
    double u = 0.5, r, s[2];
    es_action_t a = {.u = &u};
    e->reset(st, 7);
    int first_end = 0;
    for (int t = 1; t <= 205 && !first_end; t++)
        if (e->step(st, &a, &r) != ES_ENV_RUNNING)
            first_end = t;
    is_int(first_end, 200, "pendulum: the episode ends (truncated) on step 200");
    ok(e->step(st, &a, &r) == ES_ENV_TRUNCATED && r == 0.0,
       "pendulum: stepping after the end gives reward 0");

    /* reset: th uniform in [-pi, pi), thdot in [-1, 1) */
    double lo[2] = {10, 10}, hi[2] = {-10, -10};
    int in_range = 1;
    for (uint64_t seed = 0; seed < 2000; seed++) {
        e->reset(st, seed);
        e->get_state(st, s);
        in_range &= s[0] >= -M_PI && s[0] < M_PI && s[1] >= -1.0 && s[1] < 1.0;
        for (int i = 0; i < 2; i++) {
            lo[i] = fmin(lo[i], s[i]);
            hi[i] = fmax(hi[i], s[i]);
        }
    }
    ok(in_range && lo[0] < -3.1 && hi[0] > 3.1 && lo[1] < -0.99 && hi[1] > 0.99,
       "pendulum: reset states fill [-pi, pi) x [-1, 1)");
    free(st);
}

static void
s_test_descriptors(void)
{
    const es_env_t *c = &es_env_cartpole, *p = &es_env_pendulum;
    ok(c->obs_dim == 4 && c->act_dim == 2 && !c->continuous && c->max_episode_steps == 500 &&
           c->solved_return == 475.0 && c->solved_episodes == 100 && c->state_dim == 4,
       "cartpole: shape, limits and solved score");
    ok(p->obs_dim == 3 && p->act_dim == 1 && p->continuous && p->act_bound == 2.0 &&
           p->max_episode_steps == 200 && p->solved_return == -200.0 && p->state_dim == 2,
       "pendulum: shape, limits and target score");
    ok(es_env_find("cartpole") == c && es_env_find("CartPole-v1") == c &&
           es_env_find("PENDULUM") == p && es_env_find("Pendulum-v1") == p &&
           !es_env_find("acrobot") && !es_env_find(NULL),
       "es_env_find by short name or Gymnasium id, any case");
}

int
main(void)
{
    s_test_descriptors();
    s_test_cartpole();
    s_test_pendulum();
    return done_testing();
}
