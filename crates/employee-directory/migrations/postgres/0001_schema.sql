-- Core HR schema, PostgreSQL flavour of ../0001_schema.sql (same version
-- number). Text columns use the "C" collation: byte order, like SQLite's
-- BINARY, and lower() folds ASCII only, like SQLite's NOCASE, so queries
-- written as lower(a) = lower(b) / ORDER BY lower(a) give SQLite's results
-- whatever the database's default locale is.

CREATE TABLE departments (
    id          TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name        TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL,
    head_id     TEXT COLLATE "C"
);
CREATE UNIQUE INDEX departments_id_nocase ON departments (lower(id));
CREATE UNIQUE INDEX departments_name_nocase ON departments (lower(name));

CREATE TABLE teams (
    id            TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    name          TEXT COLLATE "C" NOT NULL,
    department_id TEXT COLLATE "C" NOT NULL REFERENCES departments (id),
    description   TEXT COLLATE "C" NOT NULL,
    manager_id    TEXT COLLATE "C"
);
CREATE UNIQUE INDEX teams_id_nocase ON teams (lower(id));
CREATE UNIQUE INDEX teams_name_nocase ON teams (lower(name));

CREATE TABLE locations (
    id      BIGINT NOT NULL PRIMARY KEY,
    city    TEXT COLLATE "C" NOT NULL,
    region  TEXT COLLATE "C",
    country TEXT COLLATE "C" NOT NULL,
    UNIQUE (city, country)
);

CREATE TABLE roles (
    id            BIGINT NOT NULL PRIMARY KEY,
    title         TEXT COLLATE "C" NOT NULL,
    track         TEXT COLLATE "C" NOT NULL
        CHECK (track IN ('individual-contributor', 'manager', 'executive')),
    department_id TEXT COLLATE "C" NOT NULL
        REFERENCES departments (id) DEFERRABLE INITIALLY DEFERRED
);
CREATE UNIQUE INDEX roles_title_nocase ON roles (lower(title));

-- Annual base salary band per role and level.
CREATE TABLE compensation_bands (
    role_id    BIGINT NOT NULL REFERENCES roles (id),
    level      TEXT COLLATE "C" NOT NULL
        CHECK (level IN ('junior', 'mid', 'senior', 'staff', 'principal', 'director', 'executive')),
    currency   TEXT COLLATE "C" NOT NULL DEFAULT 'USD',
    min_salary BIGINT NOT NULL,
    mid_salary BIGINT NOT NULL,
    max_salary BIGINT NOT NULL,
    PRIMARY KEY (role_id, level),
    CHECK (min_salary <= mid_salary AND mid_salary <= max_salary)
);

CREATE TABLE employees (
    id                 TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    first_name         TEXT COLLATE "C" NOT NULL,
    last_name          TEXT COLLATE "C" NOT NULL,
    email              TEXT COLLATE "C" NOT NULL,
    phone              TEXT COLLATE "C" NOT NULL,
    role_id            BIGINT NOT NULL REFERENCES roles (id),
    level              TEXT COLLATE "C" NOT NULL,
    department_id      TEXT COLLATE "C" NOT NULL REFERENCES departments (id),
    team_id            TEXT COLLATE "C" REFERENCES teams (id) DEFERRABLE INITIALLY DEFERRED,
    manager_id         TEXT COLLATE "C"
        REFERENCES employees (id) DEFERRABLE INITIALLY DEFERRED,
    location_id        BIGINT NOT NULL REFERENCES locations (id),
    employment_type    TEXT COLLATE "C" NOT NULL
        CHECK (employment_type IN ('full-time', 'part-time', 'contractor')),
    office_type        TEXT COLLATE "C" NOT NULL
        CHECK (office_type IN ('remote', 'hybrid', 'on-site')),
    start_date         DATE NOT NULL,
    status             TEXT COLLATE "C" NOT NULL CHECK (status IN ('active', 'terminated')),
    termination_date   DATE,
    termination_reason TEXT COLLATE "C"
        CHECK (termination_reason IN ('voluntary', 'involuntary')),
    -- Annual base salary (full-time equivalent) in the band's currency.
    salary             BIGINT NOT NULL,
    FOREIGN KEY (role_id, level) REFERENCES compensation_bands (role_id, level),
    CHECK ((status = 'terminated') = (termination_date IS NOT NULL))
);
CREATE UNIQUE INDEX employees_id_nocase ON employees (lower(id));
CREATE UNIQUE INDEX employees_email_nocase ON employees (lower(email));

-- Cycles (department head, team manager) closed once employees exist.
ALTER TABLE departments ADD FOREIGN KEY (head_id)
    REFERENCES employees (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE teams ADD FOREIGN KEY (manager_id)
    REFERENCES employees (id) DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE skills (
    id       BIGINT NOT NULL PRIMARY KEY,
    name     TEXT COLLATE "C" NOT NULL,
    category TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX skills_name_nocase ON skills (lower(name));

CREATE TABLE employee_skills (
    employee_id TEXT COLLATE "C" NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    skill_id    BIGINT NOT NULL REFERENCES skills (id),
    -- 1 beginner, 2 intermediate, 3 advanced, 4 expert.
    proficiency BIGINT NOT NULL CHECK (proficiency BETWEEN 1 AND 4),
    PRIMARY KEY (employee_id, skill_id)
);

CREATE TABLE employment_history (
    id            BIGINT NOT NULL PRIMARY KEY,
    employee_id   TEXT COLLATE "C" NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    company       TEXT COLLATE "C" NOT NULL,
    title         TEXT COLLATE "C" NOT NULL,
    level         TEXT COLLATE "C",
    department_id TEXT COLLATE "C" REFERENCES departments (id),
    event         TEXT COLLATE "C" NOT NULL
        CHECK (event IN ('previous-employer', 'hired', 'promoted')),
    start_date    DATE NOT NULL,
    end_date      DATE
);

CREATE TABLE leave_balances (
    employee_id   TEXT COLLATE "C" NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    year          INTEGER NOT NULL,
    leave_type    TEXT COLLATE "C" NOT NULL
        CHECK (leave_type IN ('annual', 'sick', 'parental', 'bereavement', 'unpaid')),
    entitled_days DOUBLE PRECISION NOT NULL CHECK (entitled_days >= 0),
    used_days     DOUBLE PRECISION NOT NULL CHECK (used_days >= 0),
    pending_days  DOUBLE PRECISION NOT NULL CHECK (pending_days >= 0),
    PRIMARY KEY (employee_id, year, leave_type)
);

-- Facts about the database itself (seed version, ...).
CREATE TABLE directory_meta (
    key   TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);
