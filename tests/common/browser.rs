//! A browser on the dashboard: a session cookie kept from its login, pages read and forms
//! posted with it, redirects not followed (where they lead is what a test checks).

use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::redirect::Policy;

use super::api::TestApi;

pub struct Browser {
    pub client: reqwest::Client,
    pub base: String,
    pub cookie: String,
}

impl Browser {
    pub async fn login(api: &TestApi, token: &str) -> reqwest::Response {
        no_redirects()
            .post(format!("{}/ui/login", api.base))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap()
    }

    pub async fn logged_in(api: &TestApi) -> Self {
        let admin = api.token(None).await;
        Self::logged_in_with(api, &admin).await
    }

    /// A browser logged in with `admin`: it keeps the cookie the login set.
    pub async fn logged_in_with(api: &TestApi, admin: &str) -> Self {
        let response = Self::login(api, admin).await;
        assert_eq!(response.status(), 303);
        Self {
            client: no_redirects(),
            base: api.base.clone(),
            cookie: format!("nightshift_ui={}", cookie_value(&response)),
        }
    }

    /// The session's secret, as the cookie holds it.
    pub fn secret(&self) -> &str {
        self.cookie.strip_prefix("nightshift_ui=").unwrap()
    }

    /// Where a page answered with a redirect sends the browser, and whether it clears the
    /// cookie.
    pub async fn redirected(&self, path: &str) -> (u16, String, bool) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        let to = r
            .headers()
            .get(LOCATION)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let cleared = r
            .headers()
            .get(SET_COOKIE)
            .is_some_and(|v| v.to_str().unwrap().contains("Max-Age=0"));
        (r.status().as_u16(), to, cleared)
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    pub async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        origin: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .form(form);
        if let Some(origin) = origin {
            request = request.header(ORIGIN, origin);
        }
        request.send().await.unwrap()
    }

    pub async fn csrf(&self) -> String {
        let (_, page) = self.get("/ui").await;
        let at = page.find("name=\"csrf\" value=\"").expect("a form token") + 19;
        page[at..at + 32].to_string()
    }
}

/// The value a login's `Set-Cookie` gives the dashboard's cookie.
pub fn cookie_value(response: &reqwest::Response) -> String {
    let set = response.headers()[SET_COOKIE].to_str().unwrap();
    let pair = set.split(';').next().unwrap();
    pair.strip_prefix("nightshift_ui=")
        .unwrap_or_else(|| panic!("{set}"))
        .to_string()
}

pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}
